package manifest

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	metavalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/config/crd"
	"github.com/tickstack/tickstack/internal/bench/judge"
	"github.com/tickstack/tickstack/internal/webhook"
)

// Problem is one thing wrong with a document, at a field path when it has one (kubectl's form:
// "spec.cpu.isolated").
type Problem struct {
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

func (p Problem) String() string {
	if p.Field == "" {
		return p.Message
	}
	return p.Field + ": " + p.Message
}

// Result is the check of one document.
type Result struct {
	File       string    `json:"file"`
	Document   int       `json:"document"`
	Item       int       `json:"item,omitempty"`
	APIVersion string    `json:"apiVersion,omitempty"`
	Kind       string    `json:"kind,omitempty"`
	Namespace  string    `json:"namespace,omitempty"`
	Name       string    `json:"name,omitempty"`
	Valid      bool      `json:"valid"`
	Errors     []Problem `json:"errors,omitempty"`
	Warnings   []string  `json:"warnings,omitempty"`
	doc        Document
}

// String names the checked document as messages do.
func (r Result) String() string { return r.doc.String() }

// Err is nil for a valid document, else an error naming the document and every problem.
func (r Result) Err() error {
	if r.Valid {
		return nil
	}
	lines := make([]string, 0, len(r.Errors))
	for _, p := range r.Errors {
		lines = append(lines, p.String())
	}
	if len(lines) == 1 {
		return fmt.Errorf("%s: %s", r.doc, lines[0])
	}
	return fmt.Errorf("%s is invalid:\n  %s", r.doc, strings.Join(lines, "\n  "))
}

// kindSchema is what the API server builds from one CRD version to serve it.
type kindSchema struct {
	gvk        schema.GroupVersionKind
	namespaced bool
	status     bool // the status subresource: a create drops .status
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

// Validator checks tickstack objects as the API server and the operator would, offline. It is safe
// for concurrent use.
type Validator struct {
	crds map[string]*apiextensionsv1.CustomResourceDefinition // by kind
	mu   sync.Mutex
	// built caches each kind's compiled schema (the CEL programs take a moment to compile).
	built map[string]*kindSchema
}

// NewValidator reads the CRDs embedded from config/crd/bases.
func NewValidator() (*Validator, error) {
	v := &Validator{crds: map[string]*apiextensionsv1.CustomResourceDefinition{}, built: map[string]*kindSchema{}}
	files, err := fs.Glob(crd.Bases, "bases/*.yaml")
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no CRDs embedded from config/crd/bases (%v)", err)
	}
	for _, f := range files {
		raw, err := crd.Bases.ReadFile(f)
		if err != nil {
			return nil, err
		}
		c := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(raw, c); err != nil {
			return nil, fmt.Errorf("embedded CRD %s: %w", f, err)
		}
		v.crds[c.Spec.Names.Kind] = c
	}
	return v, nil
}

// Kinds are the kinds the validator knows, sorted.
func (v *Validator) Kinds() []string { return slices.Sorted(maps.Keys(v.crds)) }

func (v *Validator) kind(kind string) (*kindSchema, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if ks := v.built[kind]; ks != nil {
		return ks, nil
	}
	c := v.crds[kind]
	var ver *apiextensionsv1.CustomResourceDefinitionVersion
	for i := range c.Spec.Versions {
		if c.Spec.Versions[i].Name == tsv1.GroupVersion.Version {
			ver = &c.Spec.Versions[i]
		}
	}
	if ver == nil || ver.Schema == nil {
		return nil, fmt.Errorf("embedded CRD %s has no %s schema", c.Name, tsv1.GroupVersion.Version)
	}
	// As the API server's CRD handler builds it: the internal schema, its structural form with the
	// defaults pruned, the OpenAPI validator and the CEL validator.
	internal := &apiextensions.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(ver.Schema, internal, nil); err != nil {
		return nil, fmt.Errorf("CRD %s: %w", c.Name, err)
	}
	st, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("CRD %s: %w", c.Name, err)
	}
	st = st.DeepCopy()
	if err := structuraldefaulting.PruneDefaults(st); err != nil {
		return nil, fmt.Errorf("CRD %s: %w", c.Name, err)
	}
	val, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("CRD %s: %w", c.Name, err)
	}
	ks := &kindSchema{
		gvk:        schema.GroupVersionKind{Group: c.Spec.Group, Version: ver.Name, Kind: kind},
		namespaced: c.Spec.Scope == apiextensionsv1.NamespaceScoped,
		status:     ver.Subresources != nil && ver.Subresources.Status != nil,
		structural: st,
		validator:  val,
		cel:        cel.NewValidator(st, true, celconfig.PerCallLimit),
	}
	v.built[kind] = ks
	return ks, nil
}

// Check checks one document as a create: the API server's decoding (unknown and duplicate fields,
// as kubectl's strict field validation reports them), defaulting, object metadata, OpenAPI schema,
// list types and CEL rules; then, when those pass, the rules the operator applies beyond the CRD:
// the LatencyProfile validating webhook's, and the LatencyBenchmark controller's spec checks.
func (v *Validator) Check(ctx context.Context, d Document) Result {
	r := Result{File: d.File, Document: d.Index, Item: d.Item, doc: d}
	fail := func(field, msg string) Result {
		r.Errors = append(r.Errors, Problem{Field: field, Message: msg})
		return r
	}
	if d.Err != nil {
		return fail("", d.Err.Error())
	}
	u := d.Object.DeepCopy()
	r.APIVersion, r.Kind, r.Namespace, r.Name = u.GetAPIVersion(), u.GetKind(), u.GetNamespace(), u.GetName()
	if r.Kind == "" {
		return fail("kind", "Required value: give one of "+strings.Join(v.Kinds(), ", "))
	}
	gv, err := schema.ParseGroupVersion(r.APIVersion)
	switch {
	case r.APIVersion == "":
		return fail("apiVersion", "Required value: tickstack objects are "+tsv1.GroupVersion.String())
	case err != nil || gv.Group != tsv1.GroupVersion.Group:
		return fail("apiVersion", fmt.Sprintf("%s %s is not a tickstack object: this checks %s %s", r.APIVersion, r.Kind, tsv1.GroupVersion, strings.Join(v.Kinds(), ", ")))
	case v.crds[r.Kind] == nil:
		return fail("kind", fmt.Sprintf("unknown kind %q: tickstack's kinds are %s", r.Kind, strings.Join(v.Kinds(), ", ")))
	case gv.Version != tsv1.GroupVersion.Version:
		return fail("apiVersion", fmt.Sprintf("%s is not served: use %s", r.APIVersion, tsv1.GroupVersion))
	}
	ks, err := v.kind(r.Kind)
	if err != nil {
		return fail("", err.Error())
	}

	// Decoding, as the CRD handler's schema-coercing decoder does with fieldValidation=Strict.
	meta, _, unknown, err := schemaobjectmeta.GetObjectMetaWithOptions(u.Object, schemaobjectmeta.ObjectMetaOptions{ReturnUnknownFieldPaths: true})
	if err != nil {
		return fail("metadata", err.Error())
	}
	unknown = append(unknown, pruning.PruneWithOptions(u.Object, ks.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})...)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, ks.structural)
	if ferr, paths := schemaobjectmeta.CoerceWithOptions(nil, u.Object, ks.structural, false, schemaobjectmeta.CoerceOptions{ReturnUnknownFieldPaths: true}); ferr != nil {
		r.Errors = append(r.Errors, problems(field.ErrorList{ferr})...)
	} else {
		unknown = append(unknown, paths...)
	}
	for _, p := range unknown {
		r.Errors = append(r.Errors, Problem{Field: p, Message: "unknown field"})
	}
	if meta != nil {
		if err := schemaobjectmeta.SetObjectMeta(u.Object, meta); err != nil {
			return fail("metadata", err.Error())
		}
	}
	structuraldefaulting.Default(u.Object, ks.structural)
	if ks.status {
		delete(u.Object, "status") // a create cannot set the status
	}
	switch {
	case ks.namespaced && u.GetNamespace() == "":
		u.SetNamespace("default") // kubectl fills in its context's namespace
	case !ks.namespaced && u.GetNamespace() != "":
		r.Warnings = append(r.Warnings, fmt.Sprintf("metadata.namespace %q is ignored: %s is cluster-scoped", u.GetNamespace(), r.Kind))
		u.SetNamespace("")
	}

	// The registry's create checks (customresource strategy Validate and BeforeCreate).
	errs := metavalidation.ValidateObjectMetaAccessor(u, ks.namespaced, metavalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	errs = append(errs, apiservervalidation.ValidateCustomResource(nil, u.Object, ks.validator)...)
	errs = append(errs, schemaobjectmeta.Validate(ctx, nil, u.Object, ks.structural, false)...)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, ks.structural, u.Object)...)
	skipCEL := blocking(errs)
	if !skipCEL {
		celErrs, _ := ks.cel.Validate(ctx, nil, ks.structural, u.Object, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	r.Errors = append(r.Errors, problems(errs)...)
	if skipCEL {
		r.Errors = append(r.Errors, Problem{Message: "the CRD's CEL rules were not checked because of the errors above (as the API server does): fix them and check again"})
	}
	if len(r.Errors) > 0 {
		return r
	}

	// What the operator refuses beyond the CRD, with the functions it runs.
	more, warnings, err := operatorRules(u)
	if err != nil {
		return fail("", err.Error())
	}
	r.Errors, r.Warnings = append(r.Errors, more...), append(r.Warnings, warnings...)
	r.Valid = len(r.Errors) == 0
	return r
}

// operatorRules runs the validating webhook's checks on a LatencyProfile and the benchmark
// controller's on a LatencyBenchmark.
func operatorRules(u *unstructured.Unstructured) ([]Problem, []string, error) {
	switch u.GetKind() {
	case "LatencyProfile":
		p := &tsv1.LatencyProfile{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
			return nil, nil, err
		}
		warnings, errs := webhook.ValidateProfileSpec(&p.Spec, field.NewPath("spec"))
		return problems(errs), warnings, nil
	case "LatencyBenchmark":
		b := &tsv1.LatencyBenchmark{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, b); err != nil {
			return nil, nil, err
		}
		var out []Problem
		for _, p := range judge.SpecProblems(b) {
			f, msg, ok := strings.Cut(p, ": ")
			if !ok || strings.ContainsAny(f, " ") {
				f, msg = "", p
			}
			out = append(out, Problem{Field: f, Message: msg + " (the operator would refuse to run it: condition Valid=False)"})
		}
		return out, nil, nil
	}
	return nil, nil, nil
}

// blocking says whether the API server would skip the CEL rules: a wrong type, a missing required
// field or a size limit exceeded (customresource strategy's hasBlockingErr).
func blocking(errs field.ErrorList) bool {
	for _, e := range errs {
		switch e.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return true
		}
	}
	return false
}

func problems(errs field.ErrorList) []Problem {
	out := make([]Problem, 0, len(errs))
	for _, e := range errs {
		f := e.Field
		if f == "<nil>" {
			f = ""
		}
		out = append(out, Problem{Field: f, Message: e.ErrorBody()})
	}
	return out
}
