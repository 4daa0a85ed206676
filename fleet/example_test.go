package fleet_test

import (
	"context"
	"errors"
	"log"
	"time"

	"sessdb/fleet"
	"sessdb/fleet/etcdmeta"
	"sessdb/gates"
	"sessdb/store"
	"sessdb/store/transcript"
)

// A worker's job loop on a fleet, as the sessdb command opens it: the
// store runs on the fleet's Backend, or, when etcd does not answer (or
// refuses the login) or the transcripts dir's storage failed, on
// Unreachable's, whose resolve is a named cold start (store-unavailable)
// and whose promote is promote-failed with the run kept for a retry:
// failing the job on Open's error instead would lose the run the CLI
// starts cold. It needs a running etcd, so it is compiled, not run;
// package store's Example runs the same loop on a sessions root.
func Example() {
	clock := time.Now // the store's clock, given to both
	cfg := fleet.Config{
		Config: etcdmeta.Config{
			Endpoints:      []string{"http://10.0.0.1:2379", "http://10.0.0.2:2379", "http://10.0.0.3:2379"},
			RequestTimeout: 5 * time.Second, // a Duration: a bare 5 would be 5ns, refused
		},
		TranscriptsDir: "/mnt/pi-transcripts", // the export every worker mounts
		Now:            clock,
	}
	opts := store.Options{Bounds: gates.Bounds{MaxBytes: 8 << 20, TTL: 14 * 24 * time.Hour}, Now: clock}

	var s *store.Store
	b, err := fleet.Open(cfg)
	switch {
	case err == nil:
		defer b.Close()
		// Optional: tells a dir that is another fleet's (a configuration
		// to fix) from a promotion's fault; each promotion claims it too.
		if cerr := b.Claim(context.Background()); errors.Is(cerr, fleet.ErrOtherFleet) {
			log.Fatal(cerr)
		}
		s = store.NewOn(b, opts)
	case fleet.IsUnreachable(err):
		u, uerr := fleet.Unreachable(cfg, err)
		if uerr != nil {
			log.Fatal(uerr)
		}
		s = store.NewOn(u, opts)
	default:
		log.Fatal(err) // the configuration's mistake (etcdmeta.ErrInvalidConfig, fleet.ErrNoTranscriptsDir)
	}

	key := store.Key("github", "acme/widget", "pi/issue-42")
	jobDir := "/run/jobs/1234"
	sess, err := s.Resolve(key, store.Job{PiVersion: "0.58.3", Venue: "local", Model: "anthropic/claude-sonnet-4-5", ID: "1234"}, jobDir)
	if err != nil {
		log.Fatal(err) // a fault: no staged file, no ticket
	}
	log.Printf("resume=%v reason=%s", sess.Resume, sess.Reason)

	// ... run pi on <jobDir>/session/current.jsonl ...

	res, err := s.Promote(sess, store.PromoteRequest{PiVersion: "0.58.3", Require: transcript.Answered})
	if err != nil {
		log.Println(err) // promote-failed (or busy): the run stays in the job dir; retry with the same Session
	}
	log.Printf("promoted=%v reason=%s gen=%d", res.Promoted, res.Reason, res.Gen)
}

// The morning's numbers of a fleet, as `sessdb stats` prints them: one
// read-only walk of every record and its history, summed in package
// store's figures. Like Example it needs a running etcd, so it is
// compiled, not run.
func ExampleBackend_Stats() {
	b, err := fleet.Open(fleet.Config{
		Config:         etcdmeta.Config{Endpoints: []string{"http://10.0.0.1:2379"}},
		TranscriptsDir: "/mnt/pi-transcripts",
	})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	st, err := b.Stats(context.Background(), fleet.StatsOptions{Window: 24 * time.Hour, Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
	if err != nil {
		log.Fatal(err) // etcd unavailable, the transcripts dir unavailable: no figures
	}
	promoted := st.Promotions.Count(func(k store.PromotionKind) bool { return k.Outcome == string(gates.Promoted) })
	resumed := st.Promotions.Count(func(k store.PromotionKind) bool {
		return k.Outcome == string(gates.Promoted) && k.Start == string(gates.Resumed)
	})
	log.Printf("%d keys; %d promotions in the last day, %d resumed; transcripts %d B, etcd %d B",
		st.Keys, promoted, resumed, st.TranscriptBytes, st.EtcdBytes)
}
