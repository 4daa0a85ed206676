package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/gates"
	slegacy "sessdb/store/legacy"
	"sessdb/store/transcript"
)

// Job is what the resolving job brings.
type Job struct {
	PiVersion, Venue, Model string
}

// Verdict is the legacy resolve's answer.
type Verdict struct {
	Resume bool
	Reason gates.Reason
	Bytes  int64
}

// legacyResolve is the legacy resolveSession (§2.2) for the key dir keyDir and
// the job dir jobDir: the ladder of readCanonical (§2.3) with its reads in
// their order, the copy, the venue and identity re-checks, and a 0-byte
// staged file on a cold start.
func legacyResolve(keyDir, jobDir string, job Job, o legacyOptions) (Verdict, error) {
	stageDir := filepath.Join(jobDir, stagedDirName)
	if err := os.MkdirAll(stageDir, 0o700); err != nil {
		return Verdict{}, err
	}
	staged := filepath.Join(stageDir, transcriptName)
	v, token := readCanonical(keyDir, job, o)
	if v.Resume {
		canonical := filepath.Join(keyDir, transcriptName)
		if _, err := legacyCopyFile(canonical, staged, false); err != nil {
			os.RemoveAll(stageDir)
			return Verdict{}, err
		}
		// The read and the copy ran outside the promotion lock: the venue
		// first, then the transcript's identity.
		var st unix.Stat_t
		switch venue, ok := readVenue(keyDir); {
		case !ok || venue != job.Venue:
			v = Verdict{Reason: gates.VenueChanged}
		case unix.Lstat(canonical, &st) != nil || identity(&st) != token:
			v = Verdict{Reason: gates.TranscriptReplaced}
		}
		if v.Resume {
			return v, nil
		}
	}
	if err := writeEmpty(staged); err != nil {
		os.RemoveAll(stageDir)
		return Verdict{}, err
	}
	return v, nil
}

type identityToken struct {
	dev, ino uint64
	size     int64
	mtime    unix.Timespec
}

func identity(st *unix.Stat_t) identityToken {
	return identityToken{uint64(st.Dev), st.Ino, st.Size, st.Mtim}
}

// readCanonical walks the legacy ladder, reading only what each rung needs:
// a miss stops the reads.
func readCanonical(keyDir string, job Job, o legacyOptions) (Verdict, identityToken) {
	b := o.Bounds
	canonical := filepath.Join(keyDir, transcriptName)
	cold := func(r gates.Reason) (Verdict, identityToken) { return Verdict{Reason: r}, identityToken{} }
	var st unix.Stat_t
	switch {
	case unix.Lstat(canonical, &st) != nil:
		return cold(gates.Absent)
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return cold(gates.NotARegularFile)
	case st.Size == 0:
		return cold(gates.Absent)
	case b.MaxBytes > 0 && st.Size > b.MaxBytes:
		return cold(gates.TooLarge)
	case b.TTL > 0 && o.now().Sub(time.Unix(st.Mtim.Unix())) > b.TTL:
		return cold(gates.Expired)
	}
	if job.Venue == "" {
		return cold(gates.VenueChanged)
	}
	if v, ok := readVenue(keyDir); !ok || v != job.Venue {
		return cold(gates.VenueChanged)
	}
	if job.PiVersion == "" {
		return cold(gates.PiVersionChanged)
	}
	if v, ok := readSidecar(keyDir, slegacy.PiVersionName); !ok || v != job.PiVersion {
		return cold(gates.PiVersionChanged)
	}
	if b.MaxResumeChain > 0 && readResumeChain(keyDir) >= b.MaxResumeChain {
		return cold(gates.ResumeChainTooLong)
	}
	if b.MaxContextPct > 0 {
		if v, ok := readSidecar(keyDir, slegacy.ContextName); ok {
			c, ok := slegacy.ParseContext(v)
			foreign := c.Model != "" && job.Model != "" && c.Model != job.Model
			if ok && !foreign && c.Tokens*100/c.Window >= int64(b.MaxContextPct) {
				return cold(gates.ContextTooFull)
			}
		}
	}
	// The legacy reader read the whole file to split off line 1.
	whole, err := readFile(canonical)
	if err != nil {
		return cold(gates.Unparseable)
	}
	h, err := transcript.ReadHeader(bytes.NewReader(whole))
	if err != nil || !h.IsSession() {
		return cold(gates.Unparseable)
	}
	if b.MaxAge > 0 {
		ts, ok := transcript.ParseTimestamp(h.Timestamp)
		if !h.TimestampIsString || !ok || o.now().Sub(ts) > b.MaxAge {
			return cold(gates.ConversationTooOld)
		}
	}
	return Verdict{Resume: true, Reason: gates.Resumed, Bytes: st.Size}, identity(&st)
}

// writeEmpty is writeFileSync(staged, ""): open with O_TRUNC, close.
func writeEmpty(p string) error {
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o666)
	if err != nil {
		return pathErr("open", p, err)
	}
	return unix.Close(fd)
}
