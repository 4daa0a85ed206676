package etcdtest

import (
	"net/http"
	"reflect"
	"unsafe"

	"go.etcd.io/etcd/server/v3/etcdserver"
)

// closePeerConns closes the idle connections of s's peer round tripper,
// and says whether it found one to close them on.
//
// etcd sends the requests a member makes of its peers outside raft over
// one net/http transport that keeps its connections alive: the leader's
// cluster-version monitor's GET /version to each follower, at the first
// commit of its term and every 4 s after (monitorClusterVersions,
// getMembersVersions), and a follower's lease renewal or time-to-live
// read forwarded to the leader. Nothing closes that transport's idle
// connections at a member's stop (its raft transport's are closed), and
// the connection's server side, on the peer's listener whose reads time
// out after 5 s, is left in the middle of finishing its request: its
// HTTP server's Shutdown in the member's Close waited its whole second
// for it, and the pair (four goroutines) outlived the cluster by up to 5
// s, past every test's end, so that etcdtest.Main's leak check waited
// for it as each test binary exited. Closing the idle client side ends
// the server side too (its read gets EOF).
//
// etcd gives no handle on that transport (EtcdServer's peerRt field is
// unexported), so it is read by reflection; TestAStoppedClusterLeavesNo
// PeerConnection fails, naming this, where a later etcd renames it.
func closePeerConns(s *etcdserver.EtcdServer) bool {
	rt, ok := peerTransport(s)
	if ok {
		rt.CloseIdleConnections()
	}
	return ok
}

// peerTransport is s's peer round tripper, where etcd keeps it as this
// package knows.
func peerTransport(s *etcdserver.EtcdServer) (*http.Transport, bool) {
	f := reflect.ValueOf(s).Elem().FieldByName("peerRt")
	if !f.IsValid() || f.Kind() != reflect.Interface {
		return nil, false
	}
	rt, ok := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface().(*http.Transport)
	return rt, ok
}
