package db

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/internal/fsat"
	"sessdb/internal/testfs"
)

// Without O_TMPFILE a meta.db temp is made at its name and locked just
// after: a look between the two finds it empty and not locked, as a
// creation killed there leaves it. TempInFlight asks such a temp again,
// and finds the creation's flock once it is taken; FlockedNow alone
// answered "not held", and check reported a stray temp, which --repair
// removed, failing the creation.
func TestTempInFlightWaitsForACreationAboutToLockItsTemp(t *testing.T) {
	testHookNoTmpfile = true
	t.Cleanup(func() { testHookNoTmpfile = false })
	kd := newKeyDir(t)

	secondAsk, created := make(chan struct{}), make(chan struct{})
	asks := 0
	fsat.TestHookFlockedNowOpened = func(string) {
		if asks++; asks == 2 {
			// The first ask found no flock; this one waits, between
			// its open and its flock, until the creator has its own.
			close(secondAsk)
			<-created
		}
	}
	t.Cleanup(func() { fsat.TestHookFlockedNowOpened = nil })
	type answer struct {
		held bool
		err  error
	}
	answered := make(chan answer, 1)
	testHookCreateStep = func(step string) {
		switch step {
		case "named": // made at its name, not yet locked
			tmp := onlyTemp(t, kd)
			go func() {
				held, err := TempInFlight(kd.dir, tmp)
				answered <- answer{held, err}
			}()
			select {
			case <-secondAsk:
			case a := <-answered: // answered at the first ask
				answered <- a
			}
		case "created": // locked
			select {
			case <-created:
			default:
				close(created)
			}
		}
	}
	t.Cleanup(func() { testHookCreateStep = nil })

	d, err := OpenWriter(kd.dir, kd.db, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if a := <-answered; !a.held || a.err != nil {
		t.Errorf("TempInFlight of a temp made and about to be locked: %v, %v; want true", a.held, a.err)
	}
}

// onlyTemp is the name of the one meta.db temp in kd.
func onlyTemp(t *testing.T, kd keyDir) string {
	t.Helper()
	names, err := fsat.ReadDirNames(kd.dir)
	if err != nil {
		t.Fatal(err)
	}
	var temps []string
	for _, n := range names {
		if strings.HasPrefix(n, TempPrefix) {
			temps = append(temps, n)
		}
	}
	if len(temps) != 1 {
		t.Fatalf("meta.db temps in the key dir: %q, want one", temps)
	}
	return temps[0]
}

// The other side: a temp whose flock is held is in flight; one that is not
// is debris, asked once if it has content (bbolt's pages: a creator past
// its flock, killed since) or is older than a creator waits for its flock,
// and asked again no longer than that if it is empty and young (or dated
// ahead); a name gone is ENOENT.
func TestTempInFlightTellsDebrisFromACreation(t *testing.T) {
	kd := newKeyDir(t)
	asks := 0
	fsat.TestHookFlockedNowOpened = func(string) { asks++ }
	t.Cleanup(func() { fsat.TestHookFlockedNowOpened = nil })
	place := func(name string, size int, age time.Duration) {
		t.Helper()
		p := filepath.Join(kd.path, name)
		if err := os.WriteFile(p, make([]byte, size), 0o600); err != nil {
			t.Fatal(err)
		}
		if age != 0 {
			at := time.Now().Add(-age)
			if err := os.Chtimes(p, at, at); err != nil {
				t.Fatal(err)
			}
		}
	}

	place(TempPrefix+"held", 0, 0)
	f, err := os.Open(filepath.Join(kd.path, TempPrefix+"held"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name       string
		size       int
		age        time.Duration
		held       bool
		askedAgain bool
	}{
		{TempPrefix + "held", -1, 0, true, false},
		{TempPrefix + "pages", 4096, 0, false, false},
		{TempPrefix + "old", 0, 2 * createLockWait, false, false},
		{TempPrefix + "young", 0, 0, false, true},
		// Dated an hour ahead (a clock set back since): asked again no
		// longer than a creator waits, not until it is a second old.
		{TempPrefix + "future", 0, -time.Hour, false, true},
	} {
		if c.size >= 0 {
			place(c.name, c.size, c.age)
		}
		asks = 0
		held, err := TempInFlight(kd.dir, c.name)
		if held != c.held || err != nil {
			t.Errorf("%s: %v, %v; want %v", c.name, held, err, c.held)
		}
		if again := asks > 1; again != c.askedAgain {
			t.Errorf("%s: asked %d times; want asked again %v", c.name, asks, c.askedAgain)
		}
	}
	if _, err := TempInFlight(kd.dir, TempPrefix+"gone"); !fsat.IsNotExist(err) {
		t.Errorf("a name not there: %v, want ENOENT", err)
	}
}

// TempInFlight only asks: a child forked while it held the temp's shared
// flock holds a copy of its descriptor until the child execs, and with it
// the flock (the open file description's), which must not keep the
// temp's creator from its exclusive one. The copy is made by hand here,
// inside the ask, where a fork's would be.
func TestTempInFlightLetsGoOfItsFlockThoughACopyOfItsDescriptorLives(t *testing.T) {
	kd := newKeyDir(t)
	name := TempPrefix + "debris"
	path := filepath.Join(kd.path, name)
	if err := os.WriteFile(path, []byte("not empty: debris, taken at once"), 0o600); err != nil {
		t.Fatal(err)
	}
	fsat.TestHookFlockedNowOpened = func(string) {
		copied, ok, err := testfs.DupDescriptorOf(path)
		if !ok {
			t.Skip("no /proc/self/fd to find TempInFlight's descriptor in")
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(copied) })
	}
	t.Cleanup(func() { fsat.TestHookFlockedNowOpened = nil })
	if held, err := TempInFlight(kd.dir, name); held || err != nil {
		t.Fatalf("TempInFlight of debris: %v, %v; want false, nil", held, err)
	}
	fsat.TestHookFlockedNowOpened = nil
	creatorMayFlock(t, path, "TempInFlight")
}

// TakeTemp lets go of the flock of each ask it makes again (an empty temp
// younger than createLockWait, not locked yet) though a child forked
// during the ask holds a copy of its descriptor: the temp's creator, once
// it comes to its flock, is not kept out by an ask long over. The copy is
// made by hand inside the first ask, where a fork's would be; the temp
// then grows before the second (its creator writing), which TakeTemp
// takes for debris and returns, and lets go of in turn.
func TestTakeTempLetsGoOfEachAskItMakesAgainThoughACopyOfItsDescriptorLives(t *testing.T) {
	kd := newKeyDir(t)
	name := TempPrefix + "young"
	path := filepath.Join(kd.path, name)
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	asks := 0
	fsat.TestHookFlockedNowOpened = func(string) {
		asks++
		switch asks {
		case 1:
			copied, ok, err := testfs.DupDescriptorOf(path)
			if !ok {
				t.Skip("no /proc/self/fd to find TakeTemp's descriptor in")
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { unix.Close(copied) })
		case 2:
			if err := os.WriteFile(path, []byte("pages"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(func() { fsat.TestHookFlockedNowOpened = nil })
	f, err := TakeTemp(kd.dir, name)
	fsat.TestHookFlockedNowOpened = nil
	if f == nil || err != nil {
		t.Fatalf("TakeTemp of a temp that grew: %v, %v; want it taken", f, err)
	}
	if asks != 2 {
		t.Fatalf("TakeTemp asked %d times; want twice (the empty young temp asked again)", asks)
	}
	fsat.CloseFlocked(f)
	creatorMayFlock(t, path, "TakeTemp asked again")
}

// A TakeTemp whose fstat of the temp fails returns the error and lets go
// of the flock it had, though a child forked during the ask holds a copy
// of its descriptor: a failed look keeps no creator from its temp. EIO
// stands in for a file system that stops answering.
func TestTakeTempWhoseFstatFailsLetsGoOfItsFlockThoughACopyOfItsDescriptorLives(t *testing.T) {
	kd := newKeyDir(t)
	name := TempPrefix + "unstatable"
	path := filepath.Join(kd.path, name)
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	fsat.TestHookFlockedNowOpened = func(string) {
		copied, ok, err := testfs.DupDescriptorOf(path)
		if !ok {
			t.Skip("no /proc/self/fd to find TakeTemp's descriptor in")
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(copied) })
	}
	fstatTaken = func(f *os.File) (unix.Stat_t, error) {
		return unix.Stat_t{}, &os.PathError{Op: "fstat", Path: f.Name(), Err: unix.EIO}
	}
	t.Cleanup(func() { fsat.TestHookFlockedNowOpened, fstatTaken = nil, fsat.Fstat })
	f, err := TakeTemp(kd.dir, name)
	fsat.TestHookFlockedNowOpened, fstatTaken = nil, fsat.Fstat
	if f != nil || !errors.Is(err, unix.EIO) {
		t.Fatalf("TakeTemp whose fstat failed: %v, %v; want no file and EIO", f, err)
	}
	creatorMayFlock(t, path, "TakeTemp's fstat failed")
}

// creatorMayFlock fails the test unless the temp at path can be flocked
// at once, as its creator would, after what its look did.
func creatorMayFlock(t *testing.T, path, after string) {
	t.Helper()
	creator, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer creator.Close()
	if err := unix.Flock(int(creator.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Errorf("a creator's flock after %s: %v; want it had", after, err)
	}
}
