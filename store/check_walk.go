package store

import (
	"os"
	"sort"

	"sessdb/internal/fsat"
)

// rootNames lists the names under the root, sorted, or only name when only
// is set (the root must still exist).
func (s *Store) rootNames(only string) ([]string, error) {
	root, names, err := s.listRoot(only)
	if err != nil {
		return nil, err
	}
	root.Close()
	return names, nil
}

// listRoot is rootNames with the root it listed, open: a walk that reads
// each name through it reads the directory it listed, even when the root
// is renamed under it and another directory made at its path. The caller
// closes root.
func (s *Store) listRoot(only string) (root *os.File, names []string, err error) {
	root, err = s.openRoot()
	if err != nil {
		return nil, nil, err
	}
	if only != "" {
		return root, []string{only}, nil
	}
	if names, err = fsat.ReadDirNames(root); err != nil {
		root.Close()
		return nil, nil, err
	}
	sort.Strings(names)
	return root, names, nil
}

// openRoot opens the sessions root for an operator's walk or action. A
// store made by NewOn has none: opened, its "" would be no directory at
// all, which a reap takes for a root not made yet, and reports a complete
// run that removed nothing.
func (s *Store) openRoot() (*os.File, error) {
	if s.root == "" {
		return nil, ErrNoSessionsRoot
	}
	return fsat.OpenDir(s.root)
}
