package etcdmeta

import (
	"context"
	"testing"
	"time"

	"sessdb/internal/callerctx"
	"sessdb/internal/etcdtest"
)

// Each try of a request carries the bound the store set over the
// caller's context it holds (the request timeout), so that etcd's client
// sends it with the request (grpc-timeout) and the member bounds its work
// by it too. Hedge holding its ctx to Go's contract again (callerctx.Of,
// which reports no deadline) had left every try with none, on one member
// and on several: "try's deadline: 0001-01-01 00:00:00 +0000 UTC false".
// The caller's own deadline is never a try's: its Done ends the tries,
// and one that lies bounds nothing.
func TestHedgesTriesKeepTheRequestsBound(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	stores := map[string]*Store{
		"one endpoint": open(t, c),
		// A second endpoint that takes no connection: Hedge then hedges.
		"several": open(t, c, func(cfg *Config) { cfg.Endpoints = append(cfg.Endpoints, "http://127.0.0.1:23849") }),
	}
	callers, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bound := time.Now().Add(2 * time.Minute)
	request, cancelRequest := context.WithDeadline(callerctx.Of(callers), bound)
	defer cancelRequest()
	for name, s := range stores {
		for given, tc := range map[string]struct {
			ctx  context.Context
			want time.Time // zero: none
		}{
			"the request's bound over a held caller's": {request, bound},
			"a caller's, given to Hedge itself":        {callers, time.Time{}},
		} {
			var got time.Time
			var ok bool
			_, err := Hedge(s, tc.ctx, func(c context.Context) (int, error) {
				got, ok = c.Deadline()
				return 0, nil
			}, func(error) bool { return true }, nil)
			if err != nil || ok != !tc.want.IsZero() || !got.Equal(tc.want) {
				t.Errorf("%s, %s deadline: try's deadline: %v %v (%v); want %v", name, given, got, ok, err, tc.want)
			}
		}
	}
}
