package conditions

import (
	"slices"

	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/overloads"
	"github.com/google/cel-go/common/types"
)

// uses is what an expression reads of its variables.
type uses struct {
	// free are the variables the expression names (identifiers not bound
	// by a comprehension), in order of appearance.
	free []string
	// body tells whether it reads response.body, response.json or reply,
	// or response as a whole (which may reach them).
	body bool
	// patterns are the literal patterns of matches().
	patterns []string
	// creates are the names of the types the expression creates
	// (Type{field: value}).
	creates []string
}

// bodyFields are the fields of response read from the body.
var bodyFields = []string{"body", "json"}

// scan walks a parsed expression (macros expanded) for the variables it
// uses.
func scan(e ast.Expr) uses {
	var u uses
	u.walk(e, nil)
	return u
}

// walk visits e, where bound are the names bound by the comprehensions
// around it.
func (u *uses) walk(e ast.Expr, bound []string) {
	switch e.Kind() {
	case ast.IdentKind:
		u.ident(e.AsIdent(), "", bound)
	case ast.SelectKind:
		sel := e.AsSelect()
		if op := sel.Operand(); op.Kind() == ast.IdentKind {
			u.ident(op.AsIdent(), sel.FieldName(), bound)
			return
		}
		u.walk(sel.Operand(), bound)
	case ast.CallKind:
		u.call(e.AsCall(), bound)
	case ast.ListKind:
		for _, el := range e.AsList().Elements() {
			u.walk(el, bound)
		}
	case ast.MapKind:
		for _, entry := range e.AsMap().Entries() {
			u.walk(entry.AsMapEntry().Key(), bound)
			u.walk(entry.AsMapEntry().Value(), bound)
		}
	case ast.StructKind:
		u.creates = append(u.creates, e.AsStruct().TypeName())
		for _, f := range e.AsStruct().Fields() {
			u.walk(f.AsStructField().Value(), bound)
		}
	case ast.ComprehensionKind:
		c := e.AsComprehension()
		u.walk(c.IterRange(), bound)
		u.walk(c.AccuInit(), bound)
		inner := append(slices.Clip(bound), c.IterVar(), c.AccuVar())
		if c.HasIterVar2() {
			inner = append(inner, c.IterVar2())
		}
		u.walk(c.LoopCondition(), inner)
		u.walk(c.LoopStep(), inner)
		u.walk(c.Result(), append(slices.Clip(bound), c.AccuVar()))
	}
}

// call visits a call; response.?field (the optional select) counts as a
// select of field.
func (u *uses) call(call ast.CallExpr, bound []string) {
	args := call.Args()
	if call.FunctionName() == operators.OptSelect && len(args) == 2 &&
		args[0].Kind() == ast.IdentKind && args[1].Kind() == ast.LiteralKind {
		if name, ok := args[1].AsLiteral().(types.String); ok {
			u.ident(args[0].AsIdent(), string(name), bound)
			return
		}
	}
	if call.FunctionName() == overloads.Matches && len(args) > 0 {
		if p := args[len(args)-1]; p.Kind() == ast.LiteralKind {
			if s, ok := p.AsLiteral().(types.String); ok {
				u.patterns = append(u.patterns, string(s))
			}
		}
	}
	if call.IsMemberFunction() {
		u.walk(call.Target(), bound)
	}
	for _, a := range args {
		u.walk(a, bound)
	}
}

// ident records a use of name, selecting field ("" for the whole value).
func (u *uses) ident(name, field string, bound []string) {
	if slices.Contains(bound, name) {
		return
	}
	if !slices.Contains(u.free, name) {
		u.free = append(u.free, name)
	}
	switch name {
	case "reply":
		u.body = true
	case "response":
		u.body = u.body || field == "" || slices.Contains(bodyFields, field)
	}
}
