package etcdmeta

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// These errors are returned by Open and by every operation. They are
// wrapped with the operation, the key and the cause; test for them with
// errors.Is.
var (
	// ErrUnavailable is returned when etcd did not answer within the
	// request timeout (no member reachable, no leader, a leader election
	// or a lost quorum that outlasted it) or said it could not serve the
	// request now. A write that returns it may or may not have committed:
	// read the key again, or retry on the same base (a conflict whose
	// current record names this write's transcript file is this write).
	// A request that the caller's own ctx deadline ended is reported so
	// too (the error also matches context.DeadlineExceeded): etcd's
	// client ends both the same way. A cancelled ctx is context.Canceled
	// alone. Package fleet's walks return their caller's deadline as
	// ctx's error.
	ErrUnavailable = errors.New("etcd unavailable")

	// ErrAuth is returned when etcd refused the credentials: a wrong user
	// name or password, a user without permission on the prefix, or a
	// TLS handshake that failed (a server certificate the CA file does not
	// vouch for, a client certificate the server refuses or none), or a
	// scheme the member does not serve (an https:// endpoint of a plain
	// member, an http:// one of a member that serves TLS alone). One
	// found by the probe after a request ran out of time may have
	// committed, as ErrUnavailable's (see Unanswered).
	ErrAuth = errors.New("etcd refused the credentials")

	// ErrConflict is returned, as a *ConflictError, when a guarded write
	// lost its compare: the record is no longer at the base revision.
	ErrConflict = errors.New("record changed since its base revision")

	// ErrLocked is returned by Lock when another holder kept the key's
	// lock for the whole wait.
	ErrLocked = errors.New("locked by another holder")

	// ErrTooLarge is returned when a write is larger than etcd takes in
	// one request (its --max-request-bytes, 1.5 MiB by default, or gRPC's
	// message limit): a record or history entry of huge values. It is no
	// outage: the same write fails again, and nothing was written.
	ErrTooLarge = errors.New("larger than etcd takes in one request")

	// ErrClosed is returned when a Store is used after Close.
	ErrClosed = errors.New("store closed")
)

// These errors concern what is stored.
var (
	// ErrInvalidKey is returned when a key is not 32 lowercase hex
	// characters; nothing is read or written for it.
	ErrInvalidKey = errors.New("invalid key")

	// ErrDamaged is returned when a record or history value does not
	// decode: not a msgpack map, a field of the wrong type, trailing
	// bytes, no schema version; by Lock when a key's lock dir holds a
	// key with no lease, which is no holder's and never ends; and by a
	// write to a key whose newest history entry is in the last slot an
	// entry takes (2^64-2), and by Create given an entry at 2^64-1.
	ErrDamaged = errors.New("damaged value")

	// ErrAboveLastSlot is returned, with ErrDamaged, by a read of a key
	// whose only damage is a history entry at 2^64-1, the name above the
	// last slot an entry takes (LastSlot): written by an older sessdb
	// (its guarded write claimed the slot, its Create took the seq as
	// given) or by another binary. The State holds it, at that Seq, as
	// its newest entry; no entry can follow it, and RenumberHistory
	// numbers it again with the others, as it does one in the last slot.
	ErrAboveLastSlot = errors.New("history entry above the last slot")

	// ErrNewerSchema is returned when a record's schema version is newer
	// than SchemaVersion. Its State still carries the revision, but a
	// binary that returned this must not write the key.
	ErrNewerSchema = errors.New("schema newer than this binary")

	// ErrInvalidConfig is returned by Open when a Config field is unusable,
	// as a *ConfigError naming the field.
	ErrInvalidConfig = errors.New("invalid configuration")

	// ErrHistoryOrder is returned by Create when the history's Seq do not
	// increase from one entry to the next; nothing is written.
	ErrHistoryOrder = errors.New("history entries out of order")

	// ErrInvalidArgument is returned for an argument no call can use (a
	// nil function for List to call); nothing is read or written.
	ErrInvalidArgument = errors.New("invalid argument")
)

// ConflictError is the error of a guarded write whose base revision was no
// longer the record's. It carries what the key held when the compare was
// lost, read in the same transaction, so the caller can tell a newer
// promotion (superseded) from its own earlier write without another read.
type ConflictError struct {
	Op      string // "put", "append history", "delete", "create" or "renumber history"
	Key     string // the key written
	Base    Rev    // the revision the write was guarded by
	Current State  // the record, its revision and history when the compare failed
	// Resent: etcd's client sent the transaction more than once (it
	// does, itself, when an answer is a context error's while the
	// caller's context lives), so an earlier send may have been served:
	// the compare may have been lost to this write itself, landed, as
	// after an answer lost (ErrUnavailable). Put's, AppendHistory's,
	// Create's and Delete's; a write that finds itself landed (an
	// append's entry in place) returns no conflict.
	Resent bool
}

// Error names the write, the base it was guarded by and what the key
// holds instead, never a record's values.
func (e *ConflictError) Error() string {
	held := "no record"
	if e.Current.Rev != 0 {
		held = fmt.Sprintf("the record at revision %d", e.Current.Rev)
		if t := e.Current.Record.Transcript; t != nil {
			held += fmt.Sprintf(" (gen %d)", t.Gen)
		}
	}
	return fmt.Sprintf("%s %s: %v: base revision %d, the key holds %s", e.Op, e.Key, ErrConflict, e.Base, held)
}

// Is makes errors.Is(err, ErrConflict) true for a *ConflictError.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// ConfigError is the error of Open and Config.Validate for an unusable
// Config field. Field names it as Config spells it ("Endpoints[1]",
// "CAFile"), so that a caller can name its own setting for it.
type ConfigError struct {
	Field  string // the field, as Config spells it
	Detail string // what is wrong with its value
}

// Error names the field, ErrInvalidConfig and the detail.
func (e *ConfigError) Error() string {
	return fmt.Sprintf("etcd config %s: %v: %s", e.Field, ErrInvalidConfig, e.Detail)
}

// Is makes errors.Is(err, ErrInvalidConfig) true for a *ConfigError.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

// authErrors are etcd's answers to a request whose credentials it refused.
var authErrors = []error{
	rpctypes.ErrAuthFailed, rpctypes.ErrPermissionDenied, rpctypes.ErrInvalidAuthToken,
	rpctypes.ErrUserEmpty, rpctypes.ErrAuthOldRevision, rpctypes.ErrUserNotFound,
}

// unansweredMessages are the texts of errors without a gRPC code (code
// Unknown) that say a member did not answer: a stopping member's (raft's
// own errors, which etcd passes on without a code; seen:
// TestLeaderKilledDuringPromotions), and an etcd 3.4 member's own timeout.
// The client's deadline travels with each request (grpc-timeout), and a
// member cut off from its quorum may time a linearizable read out before
// the client does, answering its handler's "context deadline exceeded"
// as code Unknown (Debian's etcd 3.4.23, two of three members stopped: 5
// of 19 resolves); taken for no sentinel, a resolve was a fault, exit 1,
// where it is the named cold start store-unavailable.
var unansweredMessages = []string{"raft: stopped", "server stopped", "transport is closing", "context deadline exceeded"}

// opErr wraps an etcd client error as "op key: [sentinel: ]cause". ctx is
// the caller's context: its own cancellation stays context.Canceled, not
// ErrUnavailable.
func opErr(ctx context.Context, op, key string, err error) error {
	if key != "" {
		op += " " + key
	}
	kind := classify(ctx, err)
	// A member that answers a cancelled request before the client sees
	// the cancel ("transport is closing", a stopping member's text) would
	// make the caller's own cancel etcd's silence: a walk stopped by
	// SIGINT reported as a failure, not as interrupted. It is the
	// cancel, as ErrUnavailable's doc says.
	if cerr := ctx.Err(); kind == ErrUnavailable && cerr == context.Canceled {
		return unanswered{fmt.Errorf("%s: %w (%w)", op, err, cerr)}
	}
	// The caller's cancel may come after the request went out: a write
	// may have committed all the same, as after a lost answer (Unanswered).
	if kind == nil && ctx.Err() == context.Canceled && errors.Is(err, context.Canceled) {
		return unanswered{fmt.Errorf("%s: %w", op, err)}
	}
	// A caller's context held to Go's contract (callerctx.Of) whose Err
	// or Done panicked ends with an error of its own that wraps
	// context.Canceled. gRPC compares a context's error with
	// context.Canceled itself and answers any other as code Unknown, an
	// error that wraps nothing: it is the caller's cancel all the same.
	if cerr := ctx.Err(); cerr != nil && cerr != context.Canceled && errors.Is(cerr, context.Canceled) && !errors.Is(err, cerr) {
		return unanswered{fmt.Errorf("%s: %w (%w)", op, err, cerr)}
	}
	// A member that timed the request out at its deadline, which travels
	// with it, answers with the text alone (etcd 3.4: "context deadline
	// exceeded", code Unknown), where the client's own timeout gives ctx's
	// error: when the deadline was the caller's, the error is that too,
	// as ErrUnavailable's doc says, or a walk would take the caller's own
	// deadline for etcd's silence.
	if cerr := ctx.Err(); kind == ErrUnavailable && cerr == context.DeadlineExceeded && !errors.Is(err, cerr) {
		return fmt.Errorf("%s: %w: %w (%w)", op, kind, err, cerr)
	}
	if kind != nil {
		return fmt.Errorf("%s: %w: %w", op, kind, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// classify names the sentinel err belongs to, or nil.
func classify(ctx context.Context, err error) error {
	if errors.Is(err, context.Canceled) && ctx.Err() == context.Canceled {
		return nil
	}
	for _, a := range authErrors {
		if errors.Is(err, a) {
			return ErrAuth
		}
	}
	// gRPC reports a failed TLS handshake as an unreachable server (or,
	// while it waits for a usable connection, as the deadline with the
	// handshake as its last error); only the text tells them apart.
	if msg := err.Error(); strings.Contains(msg, "authentication handshake failed") ||
		strings.Contains(msg, "certificate required") || strings.Contains(msg, "bad certificate") {
		return ErrAuth
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return ErrUnavailable
	}
	code := codes.Unknown
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		code = ee.Code()
	} else if s, ok := status.FromError(err); ok {
		code = s.Code()
	}
	if code == codes.Unknown {
		// A member that is shutting down, or that timed the request out
		// itself, answers without a gRPC code; a proposal may still
		// commit (on the next leader), like any unsure write.
		for _, m := range unansweredMessages {
			if strings.Contains(err.Error(), m) {
				return ErrUnavailable
			}
		}
	}
	switch code {
	case codes.Unauthenticated, codes.PermissionDenied:
		return ErrAuth
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Aborted:
		return ErrUnavailable
	case codes.ResourceExhausted:
		switch {
		case errors.Is(err, rpctypes.ErrTooManyRequests):
			return ErrUnavailable // etcd sheds load
		case !errors.Is(err, rpctypes.ErrNoSpace):
			// gRPC's own, on either side: a message over its size limit,
			// which the same write exceeds again however long it retries.
			return ErrTooLarge
		}
	}
	if errors.Is(err, rpctypes.ErrRequestTooLarge) {
		return ErrTooLarge
	}
	return nil
}
