package store

import (
	"os"
	"sort"

	"sessdb/internal/fsat"
)

// rootNames lists the names under the root, sorted, or only name when only
// is set (the root must still exist).
func (s *Store) rootNames(only string) ([]string, error) {
	root, err := s.openRoot()
	if err != nil {
		return nil, err
	}
	if only != "" {
		root.Close()
		return []string{only}, nil
	}
	defer root.Close()
	names, err := fsat.ReadDirNames(root)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	return names, nil
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
