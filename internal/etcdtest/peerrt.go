package etcdtest

import (
	"net/http"
	"reflect"
	"unsafe"

	"go.etcd.io/etcd/server/v3/etcdserver"
)

// closePeerConns closes the idle connections of s's peer round tripper
// (see stopAll for why, and when it is safe), and says whether it found
// one to close them on. etcd gives no handle on it (EtcdServer's peerRt
// field is unexported), so it is read by reflection;
// TestAClosedClusterLeavesNoPeerConnection fails, naming the field, where
// a later etcd renames or retypes it.
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
