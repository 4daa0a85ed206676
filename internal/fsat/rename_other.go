//go:build !linux && !darwin

package fsat

// renameNoReplace has no atomic form here (FreeBSD's rename cannot refuse
// to replace): RenameNoReplace links, then unlinks.
func renameNoReplace(dirfd int, from, to string) error { return errNoAtomic }
