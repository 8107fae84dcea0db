package probing

// Secret is a string that must never be shown: a credential or a header
// value read from a Kubernetes Secret. Formatting it (fmt's %v, %s, %q,
// %#v), marshalling it to JSON or text (as structured loggers do) gives
// "[redacted]"; Reveal gives the value.
type Secret string

const redacted = "[redacted]"

// Reveal returns the secret value.
func (s Secret) Reveal() string { return string(s) }

// String returns "[redacted]".
func (Secret) String() string { return redacted }

// GoString returns "[redacted]", quoted.
func (Secret) GoString() string { return `"` + redacted + `"` }

// MarshalText returns "[redacted]".
func (Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// MarshalJSON returns "[redacted]" as a JSON string.
func (Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }
