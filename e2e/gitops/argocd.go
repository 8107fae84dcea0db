package gitops

import (
	"context"
	"fmt"
	"os"
	"time"

	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Argo CD's health statuses.
const (
	ArgoHealthy     = "Healthy"
	ArgoProgressing = "Progressing"
	ArgoDegraded    = "Degraded"
	ArgoSuspended   = "Suspended"
)

// ArgoHealth is what an Argo CD health script returns.
type ArgoHealth struct {
	Status, Message string
}

// argoScriptTimeout bounds one run of a health script, as Argo CD does.
const argoScriptTimeout = time.Second

// LoadArgoHealthScript reads the argocd-cm ConfigMap in the YAML file path
// and returns its health script for group and kind (the data key
// resource.customizations.health.<group>_<kind>).
func LoadArgoHealthScript(path, group, kind string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading the argocd-cm ConfigMap: %w", err)
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(data, &cm); err != nil {
		return "", fmt.Errorf("parsing %s: %w", path, err)
	}
	key := "resource.customizations.health." + group + "_" + kind
	script, ok := cm.Data[key]
	if !ok {
		return "", fmt.Errorf("%s has no key %s", path, key)
	}
	return script, nil
}

// RunArgoHealth runs the health script on u as Argo CD's controller does:
// in a gopher-lua state with only the package, base and table libraries
// (no string, io or os), the object as the global obj, within a second.
func RunArgoHealth(ctx context.Context, script string, u *unstructured.Unstructured) (ArgoHealth, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for name, open := range map[string]lua.LGFunction{
		lua.LoadLibName: lua.OpenPackage, lua.BaseLibName: lua.OpenBase, lua.TabLibName: lua.OpenTable,
	} {
		l.Push(l.NewFunction(open))
		l.Push(lua.LString(name))
		if err := l.PCall(1, 0, nil); err != nil {
			return ArgoHealth{}, fmt.Errorf("opening the Lua library %q: %w", name, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, argoScriptTimeout)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", toLua(l, u.Object))
	if err := l.DoString(script); err != nil {
		return ArgoHealth{}, fmt.Errorf("running the health script: %w", err)
	}
	ret, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		return ArgoHealth{}, fmt.Errorf("the health script returned a %s, not a table", l.Get(-1).Type())
	}
	h := ArgoHealth{Status: lua.LVAsString(ret.RawGetString("status")), Message: lua.LVAsString(ret.RawGetString("message"))}
	return h, nil
}

// toLua is v, a value of an unstructured object, as a Lua value: maps and
// lists become tables (lists indexed from 1), numbers Lua numbers.
func toLua(l *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case nil:
		return lua.LNil
	case bool:
		return lua.LBool(v)
	case string:
		return lua.LString(v)
	case int64:
		return lua.LNumber(v)
	case int:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	case []any:
		t := l.CreateTable(len(v), 0)
		for _, item := range v {
			t.Append(toLua(l, item))
		}
		return t
	case map[string]any:
		t := l.CreateTable(0, len(v))
		for k, item := range v {
			t.RawSetString(k, toLua(l, item))
		}
		return t
	}
	return lua.LNil
}
