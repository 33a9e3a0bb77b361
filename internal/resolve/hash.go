package resolve

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// TuningHash identifies a resolved tuning: a node state's status.resolved.tuningHash, written by
// an agent that resolves its own node and compared by the operator, which keeps no status.tuning
// in its cache. Equal tunings hash equal (encoding/json writes struct fields in order and map keys
// sorted); empty for none.
func TuningHash(t *tsv1.NodeTuning) string {
	if t == nil {
		return ""
	}
	data, err := json.Marshal(t)
	if err != nil {
		// A NodeTuning holds only strings, numbers, bools, slices and maps of them.
		panic("resolve: marshal NodeTuning: " + err.Error())
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16])
}
