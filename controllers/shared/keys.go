package shared

// SetKey sets key to value in a label or annotation map, or removes it when value is "", and returns
// the map (allocated when it was nil and a value is set).
func SetKey(m map[string]string, key, value string) map[string]string {
	if value == "" {
		delete(m, key)
		return m
	}
	if m == nil {
		m = map[string]string{}
	}
	m[key] = value
	return m
}
