package tuning

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/tickstack/tickstack/internal/host"
)

// journalVersion is the journal file format version.
const journalVersion = 1

// Entry is one journaled original value.
type Entry struct {
	// Name is the setting name ("sysctl/vm.stat_interval", "irq/26", ...).
	Name string `json:"name"`
	// Original is the value before the agent first changed it (Absent: it did not exist).
	Original string `json:"original"`
	// Refused marks a setting the kernel refused to change (a managed IRQ): nothing was written.
	Refused bool `json:"refused,omitempty"`
}

type journalFile struct {
	Version int     `json:"version"`
	Entries []Entry `json:"entries"`
}

// loadJournal reads the journal; a missing file is an empty journal. A file that cannot be parsed
// is an error, never silently dropped: it holds originals nothing else knows.
func loadJournal(path string) ([]Entry, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	var j journalFile
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("journal %s is unreadable (%v): it holds the original host values, so "+
			"the agent stops here; inspect it and restore by hand, then delete it", path, err)
	}
	if j.Version != journalVersion {
		return nil, fmt.Errorf("journal %s has version %d, this agent reads version %d", path, j.Version, journalVersion)
	}
	return j.Entries, nil
}

// saveJournal writes the journal durably (temporary file, fsync, rename, fsync of the directory);
// an empty journal removes the file durably.
func saveJournal(path string, entries []Entry) error {
	if len(entries) == 0 {
		return host.RemoveFileDurable(path)
	}
	b, err := json.MarshalIndent(journalFile{Version: journalVersion, Entries: entries}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode journal: %w", err)
	}
	if err := host.WriteFileAtomic(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write journal: %w", err)
	}
	return nil
}

// LoadJournal reads a journal file of the same format as the agent's (the node's NRI plugin keeps
// its own per-container originals in one); a missing file is an empty journal.
func LoadJournal(path string) ([]Entry, error) { return loadJournal(path) }

// SaveJournal writes a journal file durably (see saveJournal); an empty journal removes it.
func SaveJournal(path string, entries []Entry) error { return saveJournal(path, entries) }
