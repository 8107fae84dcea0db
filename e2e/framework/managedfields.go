package framework

import (
	"encoding/json"
	"fmt"
	"strings"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
)

// EntryManagers reads wc's managedFields and returns, for every entry of
// status.vantagePoints that a field manager manages fields of, the
// managers, by the entry's shard.
func EntryManagers(wc *webcheckerv1alpha1.WebChecker) (map[string][]string, error) {
	managers := map[string][]string{}
	for _, mf := range wc.ManagedFields {
		if mf.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Status struct {
				VantagePoints map[string]json.RawMessage `json:"f:vantagePoints"`
			} `json:"f:status"`
		}
		if err := json.Unmarshal(mf.FieldsV1.Raw, &fields); err != nil {
			return nil, fmt.Errorf("reading the fields of manager %s: %w", mf.Manager, err)
		}
		for k := range fields.Status.VantagePoints {
			key, ok := strings.CutPrefix(k, "k:")
			if !ok {
				continue
			}
			var id struct {
				Shard string `json:"shard"`
			}
			if err := json.Unmarshal([]byte(key), &id); err != nil {
				return nil, fmt.Errorf("reading the entry key %s: %w", key, err)
			}
			managers[id.Shard] = append(managers[id.Shard], mf.Manager)
		}
	}
	return managers, nil
}
