package procstat

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseStatParent(t *testing.T) {
	tests := map[string]struct {
		stat     string
		wantName string
		wantPPID int
		wantErr  bool
	}{
		"plain":                  {stat: "42 (kube-apiserver) S 7 42 42 0", wantName: "kube-apiserver", wantPPID: 7},
		"spaces and parentheses": {stat: "42 (a (b) c) R 9 42", wantName: "a (b) c", wantPPID: 9},
		"truncated":              {stat: "42 (x) S", wantErr: true},
		"bad parent":             {stat: "42 (x) S y 1", wantErr: true},
		"no command":             {stat: "42 x S 1", wantErr: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			gotName, gotPPID, err := parseStatParent([]byte(tt.stat))
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantName, gotName)
			assert.Equal(t, tt.wantPPID, gotPPID)
		})
	}
}

func TestFindChild(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	pid, err := FindChild(Self, "sleep")
	require.NoError(t, err)
	assert.Equal(t, cmd.Process.Pid, pid)
	_, err = FindChild(Self, "no-such-command")
	assert.Error(t, err)
}
