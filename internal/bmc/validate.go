package bmc

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Attributes are wanted BIOS settings: attribute name to value. A value is a string, a bool, an
// integer (int, int32, int64, or an integral float64) or a json.Number. Strings are converted to the
// registry's type when that is unambiguous ("true" for a Boolean, "42" for an Integer), so profiles
// may carry every value as a string.
type Attributes map[string]any

// AttributeError is one problem with one wanted attribute.
type AttributeError struct {
	// Attribute is the attribute's name.
	Attribute string
	// Problem says what is wrong.
	Problem string
	// Allowed lists the allowed values of an Enumeration, or describes the allowed range.
	Allowed []string
}

// Error implements error.
func (e AttributeError) Error() string {
	s := fmt.Sprintf("BIOS attribute %q: %s", e.Attribute, e.Problem)
	if len(e.Allowed) > 0 {
		s += "; allowed: " + strings.Join(e.Allowed, ", ")
	}
	return s
}

// ValidationError lists every problem found in the wanted attributes. Nothing was changed.
type ValidationError struct {
	// Registry is the attribute registry validated against, or empty when the BMC has none and names
	// were checked against the current attributes.
	Registry string
	// Problems, sorted by attribute name.
	Problems []AttributeError
}

// Error implements error.
func (e *ValidationError) Error() string {
	against := "registry " + e.Registry
	if e.Registry == "" {
		against = "the current attributes (the BMC publishes no attribute registry)"
	}
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p.Error()
	}
	return fmt.Sprintf("%d invalid BIOS attribute(s), checked against %s: %s", len(e.Problems), against, strings.Join(msgs, "; "))
}

// desiredValue is a validated wanted value: the JSON value to send and its comparable form.
type desiredValue struct {
	typ    AttributeType
	send   any    // what goes into the PATCH body
	canon  string // comparable form (see canon)
	secret bool   // a Password: never shown
}

// Validate checks wanted against the registry, or against the current attributes when reg is nil.
// It returns every problem at once in a *ValidationError. current is the Bios resource's Attributes;
// it decides the JSON form sent for each value (see sendForm).
func Validate(wanted Attributes, reg *Registry, current map[string]any) error {
	_, err := validate(wanted, reg, current)
	return err
}

func validate(wanted Attributes, reg *Registry, current map[string]any) (map[string]desiredValue, error) {
	out := make(map[string]desiredValue, len(wanted))
	var problems []AttributeError
	names := make([]string, 0, len(wanted))
	for n := range wanted {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		dv, perr := validateOne(name, wanted[name], reg, current)
		if perr != nil {
			problems = append(problems, *perr)
			continue
		}
		out[name] = dv
	}
	if len(problems) > 0 {
		ve := &ValidationError{Problems: problems}
		if reg != nil {
			ve.Registry = reg.ID
		}
		return nil, ve
	}
	return out, nil
}

func validateOne(name string, value any, reg *Registry, current map[string]any) (desiredValue, *AttributeError) {
	bad := func(problem string, allowed ...string) (desiredValue, *AttributeError) {
		return desiredValue{}, &AttributeError{Attribute: name, Problem: problem, Allowed: allowed}
	}
	cur, hasCur := current[name]
	var ra RegistryAttribute
	if reg != nil {
		var ok bool
		ra, ok = reg.Attributes[name]
		if !ok {
			return bad("unknown attribute: not in attribute registry " + reg.ID + nearest(name, reg.Names()))
		}
		if ra.ReadOnly || ra.Immutable {
			return bad("read-only attribute: the BIOS does not accept changes to it")
		}
	} else {
		if !hasCur {
			return bad("unknown attribute: the BMC publishes no attribute registry and the BIOS has no current attribute of that name" + nearest(name, slices.Sorted(maps.Keys(current))))
		}
		ra = RegistryAttribute{Name: name, Type: typeOfJSON(cur)}
	}
	if ra.Type == TypePassword {
		return bad("password attributes are not managed here: BMCs never report their values, so they can be neither planned nor verified (the Bios.ChangePassword action sets them)")
	}
	if value == nil {
		return bad("no value given")
	}
	dv := desiredValue{typ: ra.Type, secret: ra.Type == TypePassword}
	switch ra.Type {
	case TypeBoolean:
		b, ok := asBool(value)
		if !ok {
			return bad(fmt.Sprintf("wrong type: %s is not a Boolean", show(value, false)), "true", "false")
		}
		dv.send, dv.canon = b, strconv.FormatBool(b)
	case TypeInteger:
		n, ok := asInt(value)
		if !ok {
			return bad(fmt.Sprintf("wrong type: %s is not an Integer", show(value, false)), rangeText(ra)...)
		}
		if (ra.LowerBound != nil && n < *ra.LowerBound) || (ra.UpperBound != nil && n > *ra.UpperBound) {
			return bad(fmt.Sprintf("value %d out of range", n), rangeText(ra)...)
		}
		if ra.ScalarIncrement != nil && *ra.ScalarIncrement > 1 {
			lo := int64(0)
			if ra.LowerBound != nil {
				lo = *ra.LowerBound
			}
			if (n-lo)%*ra.ScalarIncrement != 0 {
				return bad(fmt.Sprintf("value %d is not a step of %d", n, *ra.ScalarIncrement), rangeText(ra)...)
			}
		}
		dv.send, dv.canon = n, strconv.FormatInt(n, 10)
	case TypeEnumeration:
		s, ok := value.(string)
		if !ok {
			return bad(fmt.Sprintf("wrong type: %s is not one of the enumeration's names", show(value, false)), ra.Values...)
		}
		if reg != nil && !slices.Contains(ra.Values, s) {
			return bad(fmt.Sprintf("value %q is not allowed", s), ra.Values...)
		}
		dv.send, dv.canon = s, s
	default: // String, Password, and types this package does not know, which take strings
		s, ok := value.(string)
		if !ok {
			return bad(fmt.Sprintf("wrong type: %s is not a %s", show(value, dv.secret), orString(ra.Type)))
		}
		if ra.MinLength != nil && int64(len(s)) < *ra.MinLength || ra.MaxLength != nil && int64(len(s)) > *ra.MaxLength {
			return bad(fmt.Sprintf("length %d outside %s", len(s), lengthText(ra)))
		}
		if ra.ValueExpression != "" {
			re, err := regexp.Compile("^(?:" + ra.ValueExpression + ")$")
			if err == nil && !re.MatchString(s) {
				return bad(fmt.Sprintf("value %s does not match %s", show(s, dv.secret), ra.ValueExpression))
			}
		}
		dv.send, dv.canon = s, s
	}
	// Mirror the BMC's own JSON form: some BMCs (sushy-tools among them) report Boolean and Integer
	// attributes as strings and store what they are sent verbatim, so send what they report.
	if _, isString := cur.(string); hasCur && isString {
		dv.send = dv.canon
	}
	return dv, nil
}

func orString(t AttributeType) string {
	if t == "" {
		return "String"
	}
	return string(t)
}

// typeOfJSON infers an attribute type from a current value, for BMCs without a registry.
func typeOfJSON(v any) AttributeType {
	switch v.(type) {
	case bool:
		return TypeBoolean
	case json.Number, int, int64, float64:
		return TypeInteger
	default:
		return TypeString
	}
}

func asBool(v any) (bool, bool) {
	switch x := v.(type) {
	case bool:
		return x, true
	case string:
		switch strings.ToLower(x) {
		case "true":
			return true, true
		case "false":
			return false, true
		}
	}
	return false, false
}

func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x), true
		}
	case json.Number:
		n, err := x.Int64()
		return n, err == nil
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		return n, err == nil
	}
	return 0, false
}

// canon is the comparable form of a value as a BMC reports it, interpreted as type t.
func canon(t AttributeType, v any) (string, bool) {
	if v == nil {
		return "", false
	}
	switch t {
	case TypeBoolean:
		if b, ok := asBool(v); ok {
			return strconv.FormatBool(b), true
		}
	case TypeInteger:
		if n, ok := asInt(v); ok {
			return strconv.FormatInt(n, 10), true
		}
	}
	switch x := v.(type) {
	case string:
		return x, true
	case bool:
		return strconv.FormatBool(x), true
	case json.Number:
		return x.String(), true
	default:
		return fmt.Sprint(x), true
	}
}

// show renders a value for a message; secrets never appear.
func show(v any, secret bool) string {
	if secret {
		return "<redacted>"
	}
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%v (%T)", v, v)
}

func rangeText(ra RegistryAttribute) []string {
	lo, hi := "-inf", "+inf"
	if ra.LowerBound != nil {
		lo = strconv.FormatInt(*ra.LowerBound, 10)
	}
	if ra.UpperBound != nil {
		hi = strconv.FormatInt(*ra.UpperBound, 10)
	}
	r := "integers " + lo + ".." + hi
	if ra.ScalarIncrement != nil && *ra.ScalarIncrement > 1 {
		r += " in steps of " + strconv.FormatInt(*ra.ScalarIncrement, 10)
	}
	return []string{r}
}

func lengthText(ra RegistryAttribute) string {
	lo, hi := "0", "any"
	if ra.MinLength != nil {
		lo = strconv.FormatInt(*ra.MinLength, 10)
	}
	if ra.MaxLength != nil {
		hi = strconv.FormatInt(*ra.MaxLength, 10)
	}
	return lo + ".." + hi + " characters"
}

// nearest suggests a known name differing only in case or punctuation, a common profile typo.
func nearest(name string, known []string) string {
	fold := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == '_' || r == '-' || r == ' ' {
				return -1
			}
			return r
		}, strings.ToLower(s))
	}
	f := fold(name)
	for _, k := range known {
		if fold(k) == f {
			return fmt.Sprintf(" (did you mean %q?)", k)
		}
	}
	return ""
}
