package store

import (
	"sort"

	"sessdb/internal/fsat"
)

// rootNames lists the names under the root, sorted, or only name when only
// is set (the root must still exist).
func (s *Store) rootNames(only string) ([]string, error) {
	root, err := fsat.OpenDir(s.root)
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
