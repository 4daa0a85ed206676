package fleet

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/rs/zerolog"

	"sessdb/fleet/etcdmeta"
	"sessdb/fleet/shared"
	"sessdb/gates"
	"sessdb/internal/fsat"
	"sessdb/store"
)

// Unreachable returns the store.Backend of the fleet cfg names for when
// Open failed with cause, etcd's answer to the login that a Config with a
// user name makes: etcdmeta.ErrUnavailable (no member answered within the
// dial timeout) or etcdmeta.ErrAuth (the credentials were refused); or
// shared.ErrDirUnavailable, Open's answer when the transcripts dir's own
// stat failed for the storage (ESTALE: the export went away; EIO,
// ENOTCONN). It answers as an
// opened Backend answers when etcd or the dir fails it in the same way:
// View is store-unavailable, a named cold start, when cause is
// ErrUnavailable or ErrDirUnavailable, and otherwise fails with cause (a
// fault); every Begin
// fails with cause, so a promotion is promote-failed with it. A View that
// is store-unavailable logs cause to cfg.Logger, as an opened Backend logs
// a read etcd did not answer; every other answer carries cause in its
// error. Its ID is
// the fleet's, so that the ticket of a job resolved cold here is one a
// later promote on the fleet takes.
//
// It connects to nothing. An invalid cfg, or a transcripts dir that is
// not a directory, is Open's error; so is a cause that is neither
// sentinel, which no Backend of this fleet would answer with.
func Unreachable(cfg Config, cause error) (store.Backend, error) {
	switch {
	case cause == nil:
		// No cause is no answer Open gave; "%w" of nil would print
		// "%!w(<nil>)".
		return nil, errors.New("fleet unreachable: no cause given (Unreachable stands in for Open's etcdmeta.ErrUnavailable, etcdmeta.ErrAuth or shared.ErrDirUnavailable)")
	case !IsUnreachable(cause):
		return nil, fmt.Errorf("fleet unreachable: %w", cause)
	}
	dirGone := errors.Is(cause, shared.ErrDirUnavailable)
	valid, err := cfg.Config.Validate()
	if err != nil {
		return nil, err
	}
	if err := checkPrefix(valid.Prefix); err != nil {
		return nil, err
	}
	var dir string
	if dirGone {
		// The dir is what failed: where its name leads, as far as that
		// can be told, is the ID's; made absolute alone, where a part of
		// it cannot be looked at.
		if dir, err = fsat.ResolvedPath(cfg.TranscriptsDir); err != nil {
			if dir, err = filepath.Abs(cfg.TranscriptsDir); err != nil {
				return nil, err
			}
		}
	} else if dir, err = transcriptsDir(cfg); err != nil {
		return nil, err
	}
	return &unreachable{dir: dir, prefix: valid.Prefix, cause: cause, log: cfg.Logger}, nil
}

// IsUnreachable reports whether err is a cause Unreachable stands in for:
// an etcd that did not answer (etcdmeta.ErrUnavailable) or refused the
// credentials (etcdmeta.ErrAuth), or a transcripts dir whose storage
// failed (shared.ErrDirUnavailable). A caller that opens a fleet (or
// claims its dir) tells by it whether to answer on Unreachable's backend.
func IsUnreachable(err error) bool {
	return errors.Is(err, etcdmeta.ErrUnavailable) || errors.Is(err, etcdmeta.ErrAuth) || errors.Is(err, shared.ErrDirUnavailable)
}

type unreachable struct {
	dir, prefix string
	cause       error
	log         zerolog.Logger
}

func (u *unreachable) ID() (string, error) { return checkedID(u.dir, u.prefix) }

// Dir is the absolute transcripts dir, as Backend's.
func (u *unreachable) Dir() string { return u.dir }

func (u *unreachable) SameID(other string) (bool, error) { return sameID(u.dir, u.prefix, other), nil }

func (u *unreachable) View(key string, _ gates.Bounds) (store.KeyView, error) {
	if !errors.Is(u.cause, etcdmeta.ErrUnavailable) && !errors.Is(u.cause, shared.ErrDirUnavailable) {
		return nil, u.cause
	}
	// The view of a read that found etcd silent: no base, no file.
	u.log.Warn().Str("key", key).Err(u.cause).Msg("session_store_unavailable")
	return &view{key: key, reason: gates.StoreUnavailable}, nil
}

func (u *unreachable) Begin(key string, _ store.Base) (store.KeyTxn, error) {
	return nil, fmt.Errorf("begin %s: %w", key, u.cause)
}
