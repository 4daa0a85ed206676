package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"sessdb/store"
)

// promWriter writes the Prometheus text exposition format (version 0.0.4):
// each family's HELP and TYPE, then its samples. Label values come only
// from store's fixed label sets, never from disk, so no series carries a
// key and the label space is bounded.
type promWriter struct {
	w   io.Writer
	err error
}

func (p *promWriter) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

func (p *promWriter) family(name, typ, help string) {
	p.printf("# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

// sample writes one sample; labels are name, value pairs.
func (p *promWriter) sample(name string, value string, labels ...string) {
	var b strings.Builder
	b.WriteString(name)
	if len(labels) > 0 {
		b.WriteByte('{')
		for i := 0; i+1 < len(labels); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(labels[i] + "=" + strconv.Quote(labels[i+1])) // the values are plain ASCII tokens
		}
		b.WriteByte('}')
	}
	p.printf("%s %s\n", b.String(), value)
}

func (p *promWriter) gauge(name, help string, v int64) {
	p.family(name, "gauge", help)
	p.sample(name, itoa(v))
}

func (p *promWriter) histogram(name, help string, d *store.Distribution) {
	p.family(name, "histogram", help)
	var cum int64
	for i, n := range d.Counts {
		cum += n
		le := "+Inf"
		if i < len(d.Bounds) {
			le = itoa(d.Bounds[i])
		}
		p.sample(name+"_bucket", itoa(cum), "le", le)
	}
	p.sample(name+"_sum", itoa(d.Sum))
	p.sample(name+"_count", itoa(d.N))
}

func seconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'g', -1, 64) }

// writeStatsProm writes every family of docs/stats.md, every series of a
// family present (zeros included), so a dashboard's queries never meet a
// missing series.
func writeStatsProm(w io.Writer, s *store.Stats, walked time.Duration) error {
	p := &promWriter{w: w}
	p.family("sessdb_keys", "gauge", "Keys by layout: a sessions root's key directories (unknown: the directory could not be read), a fleet's keys in etcd (etcd).")
	for _, t := range s.Layouts {
		p.sample("sessdb_keys", itoa(t.N), "layout", t.Label)
	}
	p.gauge("sessdb_other_entries", "Names under the sessions root, or in a fleet's etcd, that are not keys.", int64(s.OtherEntries))
	p.family("sessdb_keys_by_verdict", "gauge", "Keys by the verdict a job matching the key's own pi version, venue and model would get now.")
	for _, t := range s.Verdicts {
		p.sample("sessdb_keys_by_verdict", itoa(t.N), "reason", t.Label)
	}

	pr := s.Promotions
	p.family("sessdb_promotions", "gauge", "History entries recorded in the window, by outcome (promoted or the refusal) and by how the job started (resumed, or its cold-start reason).")
	for _, o := range store.StatOutcomes() {
		for _, st := range store.StatStarts() {
			n := pr.Count(func(k store.PromotionKind) bool { return k.Outcome == o && k.Start == st })
			p.sample("sessdb_promotions", itoa(n), "outcome", o, "start", st)
		}
	}
	p.family("sessdb_promotions_by_run", "gauge", "History entries recorded in the window, by outcome and by the shape of the job's run.")
	for _, o := range store.StatOutcomes() {
		for _, r := range store.StatRuns() {
			n := pr.Count(func(k store.PromotionKind) bool { return k.Outcome == o && k.Run == r })
			p.sample("sessdb_promotions_by_run", itoa(n), "outcome", o, "run", r)
		}
	}
	p.gauge("sessdb_promoted_bytes", "Transcript bytes promoted in the window.", pr.Bytes)
	p.gauge("sessdb_history_truncated_keys", "Keys whose whole history ring (the last 64 entries) is inside the window: the promotion counts are a lower bound.", int64(pr.TruncatedKeys))

	p.histogram("sessdb_transcript_size_bytes", "Transcript sizes of the keys whose transcript is a regular file.", s.Bytes)
	p.histogram("sessdb_resume_chain", "Resume chains (consecutive deliveries) of the keys that record one.", s.ResumeChain)
	p.histogram("sessdb_context_occupancy_percent", "Last context reading in percent of the model's window, rounded down, of the keys with a reading.", s.ContextPct)

	p.gauge("sessdb_transcript_bytes", "Total size of the transcripts (a fleet's: the generation files its records name).", s.TranscriptBytes)
	p.family("sessdb_meta_bytes", "gauge", "Total size of the metadata: meta.db files (format db), legacy sidecar files (format legacy), a fleet's records and histories in etcd (format etcd).")
	p.sample("sessdb_meta_bytes", itoa(s.MetaDBBytes), "format", "db")
	p.sample("sessdb_meta_bytes", itoa(s.LegacyBytes), "format", "legacy")
	p.sample("sessdb_meta_bytes", itoa(s.EtcdBytes), "format", "etcd")

	p.family("sessdb_stats_walk_seconds", "gauge", "How long the walk of the sessions root or the fleet took.")
	p.sample("sessdb_stats_walk_seconds", seconds(walked))
	p.family("sessdb_stats_window_seconds", "gauge", "The window the promotions are counted in (--since).")
	p.sample("sessdb_stats_window_seconds", seconds(s.Window))
	interrupted := int64(0)
	if s.Interrupted {
		interrupted = 1
	}
	p.gauge("sessdb_stats_interrupted", "1 when the walk was interrupted: every other figure covers only part of the store.", interrupted)
	return p.err
}
