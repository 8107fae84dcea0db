package conditions

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// field is one field of an object variable (response.code, tls.expiry,
// ...): its CEL type and how to read it from a probe's state.
type field struct {
	name string
	typ  *types.Type
	// get reads the field of a probe whose answer has the object.
	get func(s *state) (ref.Val, error)
	// isSet, when not nil, tells whether the field is set (has()); the
	// field is set otherwise whenever the object is.
	isSet func(s *state) bool
}

// objectDef is an object variable (response, tls, grpc, dns): a CEL
// struct type whose fields are read from the Answer, lazily, once.
type objectDef struct {
	// variable is the name of the variable, typ its CEL type.
	variable string
	typ      *types.Type
	// present tells whether the probe's answer has the object; absent
	// explains why a field of an absent object cannot be read.
	present func(s *state) bool
	absent  string
	fields  []field
	// fieldTypes are the fields as the type provider describes them.
	fieldTypes map[string]*types.FieldType
}

// newObjectDef declares an object variable named variable of the struct
// type typeName.
func newObjectDef(variable, typeName, absent string, present func(*state) bool, fields ...field) *objectDef {
	d := &objectDef{
		variable: variable, typ: types.NewObjectType(typeName), present: present, absent: absent,
		fields: fields, fieldTypes: make(map[string]*types.FieldType, len(fields)),
	}
	for _, f := range fields {
		d.fieldTypes[f.name] = &types.FieldType{
			Type:    f.typ,
			IsSet:   func(target any) bool { return d.isSet(target, f) },
			GetFrom: func(target any) (any, error) { return d.get(target, f) },
		}
	}
	return d
}

func (d *objectDef) isSet(target any, f field) bool {
	o, ok := target.(*object)
	if !ok || o.def != d || !d.present(o.st) {
		return false
	}
	return f.isSet == nil || f.isSet(o.st)
}

func (d *objectDef) get(target any, f field) (ref.Val, error) {
	o, ok := target.(*object)
	if !ok || o.def != d {
		return nil, fmt.Errorf("%s: not a %s", f.name, d.typ.TypeName())
	}
	if !d.present(o.st) {
		return nil, safeError(fmt.Sprintf("%s.%s is not set: %s", d.variable, f.name, d.absent))
	}
	return f.get(o.st)
}

// object is the value of an object variable in one evaluation: a CEL
// value whose fields the interpreter reads through the type provider.
type object struct {
	def *objectDef
	st  *state
}

var _ ref.Val = (*object)(nil)

// ConvertToNative implements ref.Val: an object has no native form.
func (o *object) ConvertToNative(typeDesc reflect.Type) (any, error) {
	return nil, fmt.Errorf("%s cannot be converted to %v", o.def.typ.TypeName(), typeDesc)
}

// ConvertToType implements ref.Val: type(response) is its type.
func (o *object) ConvertToType(typeVal ref.Type) ref.Val {
	if typeVal == types.TypeType {
		return o.def.typ
	}
	return types.NewErr("type conversion error from '%s' to '%s'", o.def.typ.TypeName(), typeVal.TypeName())
}

// Equal implements ref.Val: an object equals only itself.
func (o *object) Equal(other ref.Val) ref.Val {
	return types.Bool(o == other)
}

// Type implements ref.Val.
func (o *object) Type() ref.Type { return o.def.typ }

// Value implements ref.Val: the object itself, which the field getters
// of the type provider receive.
func (o *object) Value() any { return o }

// Get implements traits.Indexer, for a field read through dyn().
func (o *object) Get(index ref.Val) ref.Val {
	name, ok := index.(types.String)
	if !ok {
		return types.ValOrErr(index, "no such overload")
	}
	i := slices.IndexFunc(o.def.fields, func(f field) bool { return f.name == string(name) })
	if i < 0 {
		return types.NewErr("no such key: %s", name)
	}
	v, err := o.def.get(o, o.def.fields[i])
	if err != nil {
		return types.WrapErr(err)
	}
	return v
}

// IsSet implements traits.FieldTester, for has() through dyn().
func (o *object) IsSet(index ref.Val) ref.Val {
	name, ok := index.(types.String)
	if !ok {
		return types.ValOrErr(index, "no such overload")
	}
	i := slices.IndexFunc(o.def.fields, func(f field) bool { return f.name == string(name) })
	if i < 0 {
		return types.NewErr("no such key: %s", name)
	}
	return types.Bool(o.def.isSet(o, o.def.fields[i]))
}

// provider is the type provider of an environment: the standard registry,
// plus the struct types of the object variables.
type provider struct {
	*types.Registry
	objects map[string]*objectDef
}

func newProvider(defs []*objectDef) (*provider, error) {
	reg, err := types.NewRegistry()
	if err != nil {
		return nil, fmt.Errorf("new type registry: %w", err)
	}
	p := &provider{Registry: reg, objects: make(map[string]*objectDef, len(defs))}
	for _, d := range defs {
		p.objects[d.typ.TypeName()] = d
	}
	return p, nil
}

// FindStructType implements types.Provider.
func (p *provider) FindStructType(name string) (*types.Type, bool) {
	if d, ok := p.objects[name]; ok {
		return types.NewTypeTypeWithParam(d.typ), true
	}
	return p.Registry.FindStructType(name)
}

// FindStructFieldNames implements types.Provider.
func (p *provider) FindStructFieldNames(name string) ([]string, bool) {
	if d, ok := p.objects[name]; ok {
		names := make([]string, len(d.fields))
		for i, f := range d.fields {
			names[i] = f.name
		}
		return names, true
	}
	return p.Registry.FindStructFieldNames(name)
}

// FindStructFieldType implements types.Provider.
func (p *provider) FindStructFieldType(name, fieldName string) (*types.FieldType, bool) {
	if d, ok := p.objects[name]; ok {
		ft, found := d.fieldTypes[fieldName]
		return ft, found
	}
	return p.Registry.FindStructFieldType(name, fieldName)
}

// NewValue implements types.Provider: the object types cannot be built in
// an expression.
func (p *provider) NewValue(name string, fields map[string]ref.Val) ref.Val {
	if _, ok := p.objects[name]; ok {
		return types.NewErr("%s cannot be created in a condition", name)
	}
	return p.Registry.NewValue(name, fields)
}
