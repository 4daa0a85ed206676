package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"sessdb/fleet"
	"sessdb/fleet/etcdmeta"
	"sessdb/store"
)

// fleetOf reads the fleet configuration of a command whose sessions root
// would be dirArg (a positional DIR, or ""): on reports whether the store
// is a fleet. A configuration error is reported (exit 2) and on is false
// with a non-zero code.
func fleetOf(inv *invocation, cfg *config, fk *fleetKnobs, dirArg string) (fc fleet.Config, on bool, code int) {
	fc, on, err := fk.parse(os.Getenv, cfg, dirArg)
	if err != nil {
		return fc, false, inv.rep.config(err)
	}
	fc.Logger = inv.rep.storeLog()
	fc.Now = clock // the store's, which the tests move: a commit window is judged by it
	return fc, on, exitOK
}

// openJobStore opens the store a job's command (resolve, promote) runs on:
// the fleet when etcd endpoints are set, else the sessions root. done
// releases it. A fleet whose etcd does not answer the login (a user name
// makes Open log in), or refuses it, or whose transcripts dir's stat
// failed for the storage (ESTALE: the export went away; EIO, ENOTCONN),
// is not a configuration
// error: it is what the fleet answers now, so the store is built on
// fleet.Unreachable's backend, on which a resolve is store-unavailable (or
// a fault, for refused credentials) and a promote promote-failed, each
// with its cause on stderr once: the backend logs it with the verdict, or
// the command reports it with the fault, so the login's failure is not
// reported here as well.
//
// With ticket (a promote's: it reads the job's ticket), the fleet claims
// its transcripts dir first (see fleet.Backend.Claim), for a ticket the
// promotion takes: one that reads and is this fleet's (store.CheckRoot).
// A ticket the promotion refuses (none, one that does not parse, one from
// another store) claims nothing, so that its promote writes nothing in
// etcd or the dir; the command reports it. A dir that is another fleet's
// is a configuration error naming the transcripts dir's knob, exit 2,
// nothing written; an etcd or a dir that does not answer the claim is as
// one that does not answer the login; any other fault of the claim is
// left to the promotion, whose Begin claims again (promote-failed).
func openJobStore(inv *invocation, cfg *config, fk *fleetKnobs, ticket func() (store.Session, error), with ...func(*store.Options)) (st *store.Store, onFleet bool, done func(), code int) {
	fc, on, code := fleetOf(inv, cfg, fk, "")
	switch {
	case code != exitOK:
		return nil, false, nil, code
	case !on:
		st, code := openStore(inv, cfg, "", with...)
		if st != nil {
			_, name := cfg.dirSetting(os.Getenv, "")
			w, err := judgeJobDir(name, "sessions root", st.Root())
			if err != nil {
				return nil, false, nil, inv.rep.config(err)
			}
			if w != "" {
				inv.rep.warn(w)
			}
		}
		return st, false, func() {}, code
	}
	_, name := fk.transcriptsDir.get(os.Getenv)
	w, err := judgeJobDir(name, "transcripts dir", fc.TranscriptsDir)
	if err != nil {
		return nil, true, nil, inv.rep.config(err)
	}
	if w != "" {
		inv.rep.warn(w)
	}
	opts, err := storeOptions(cfg, inv, with...)
	if err != nil {
		return nil, true, nil, inv.rep.config(err)
	}
	b, err := fleet.Open(fc)
	if err == nil {
		st = store.NewOn(b, opts)
		if ticket != nil && takes(st, ticket) {
			// Any other fault of the claim (a damaged fleet ID, a mark
			// that cannot be read) is the promotion's: its Begin claims
			// again and the promote is promote-failed, exit 0, as for
			// every fault.
			if cerr := b.Claim(context.Background()); errors.Is(cerr, fleet.ErrOtherFleet) || fleet.IsUnreachable(cerr) {
				b.Close()
				err = cerr
			}
		}
	}
	err = fk.credentialsNamed(os.Getenv, err)
	switch {
	case err == nil:
		return st, true, func() { b.Close() }, exitOK
	case fleet.IsUnreachable(err):
		u, uerr := fleet.Unreachable(fc, err)
		if uerr != nil {
			return nil, true, nil, inv.rep.fault(uerr)
		}
		return store.NewOn(u, opts), true, func() {}, exitOK
	}
	return nil, true, nil, fleetError(inv, fk, err)
}

// takes reports whether st's promotion takes the ticket ticket reads: one
// that reads, and was issued by st (else the promotion refuses it before
// it writes anything).
func takes(st *store.Store, ticket func() (store.Session, error)) bool {
	sess, err := ticket()
	return err == nil && st.CheckRoot(sess) == nil
}

// openFleetWalk opens the fleet for a walk (dump, check, reap, migrate's
// --to and --from etcd). Its transcripts dir must be one a walk may
// descend, as a sessions root must; an etcd that refuses or does not
// answer a login is a fault. ctx is the walk's (interruptContext), made
// before the fleet is opened: a signal while it connects (a login waits
// up to the request timeout for a member that does not answer) ends the
// wait, and b is nil with interrupted true, for the command to report
// its walk interrupted with nothing done (exit 130). Before, the signal
// came before any was caught, and killed the command, nothing on stdout.
// The connection left is closed once its open returns.
func openFleetWalk(ctx context.Context, inv *invocation, fk *fleetKnobs, fc fleet.Config) (b *fleet.Backend, interrupted bool, code int) {
	_, name := fk.transcriptsDir.get(os.Getenv)
	if err := checkWalkDir(name+": the transcripts dir", "point it at the fleet's shared directory", fc.TranscriptsDir); err != nil {
		return nil, false, inv.rep.config(err)
	}
	type opened struct {
		b   *fleet.Backend
		err error
	}
	done := make(chan opened, 1)
	go func() {
		b, err := fleet.Open(fc)
		done <- opened{b, err}
	}()
	select {
	case o := <-done:
		if o.err != nil {
			return nil, false, fleetError(inv, fk, o.err)
		}
		return o.b, false, exitOK
	case <-ctx.Done():
		go func() {
			if o := <-done; o.b != nil {
				o.b.Close()
			}
		}()
		return nil, true, exitOK
	}
}

// fleetError reports an error of fleet.Open, or of a fleet's walk: a
// configuration the checks before it let through (exit 2, naming the
// knob: a transcripts dir that is another fleet's among them), else a
// fault.
func fleetError(inv *invocation, fk *fleetKnobs, err error) int {
	switch {
	case errors.Is(err, etcdmeta.ErrInvalidConfig):
		return inv.rep.config(fk.configError(os.Getenv, err))
	case errors.Is(err, fleet.ErrNoTranscriptsDir), errors.Is(err, fleet.ErrOtherFleet):
		_, name := fk.transcriptsDir.get(os.Getenv)
		return inv.rep.config(fmt.Errorf("%s: %w", name, err))
	}
	return inv.rep.fault(fk.credentialsNamed(os.Getenv, err))
}

// storeOptions are the store's options from the configuration: the
// ladder's bounds, the logger, the clock, and what with adds.
func storeOptions(cfg *config, inv *invocation, with ...func(*store.Options)) (store.Options, error) {
	b, err := cfg.parseBounds(os.Getenv)
	if err != nil {
		return store.Options{}, err
	}
	opts := store.Options{Bounds: b, Logger: inv.rep.storeLog(), Now: clock}
	for _, f := range with {
		f(&opts)
	}
	return opts, nil
}

// graceFlag is --grace D, check's and reap's grace period on a fleet.
type graceFlag struct{ raw string }

// maxGrace bounds --grace: past it, orphans would outlive any reason to
// keep them.
const maxGrace = 90 * 24 * time.Hour

func bindGrace(fs *flag.FlagSet) *graceFlag {
	g := &graceFlag{}
	fs.StringVar(&g.raw, "grace", "", "on a fleet: how old, `D` (a Go duration), a file no record needs must be before it is an orphan, and how long after a newer generation landed the one it superseded is kept; longer than any resolve's copy and the hosts' clock skew (default 1h)")
	return g
}

// parse returns the grace period: 0 for the default, an error for a value
// that is not a duration or for --grace given without a fleet (where it
// would do nothing).
func (g *graceFlag) parse(inv *invocation, onFleet bool) (time.Duration, error) {
	switch {
	case !inv.given("grace"):
		return 0, nil
	case !onFleet:
		return 0, errors.New("--grace is a fleet's grace period: it needs --etcd-endpoints (a key dir's stray temps go after a fixed hour)")
	}
	return parseDuration("--grace", g.raw, 0, maxGrace)
}
