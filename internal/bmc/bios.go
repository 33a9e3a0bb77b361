package bmc

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/stmcginnis/gofish"
)

// BIOSState is what the BMC reports about the system's BIOS settings.
type BIOSState struct {
	// SystemID is the ComputerSystem's Id.
	SystemID string
	// RegistryID is the attribute registry the Bios resource names (its AttributeRegistry).
	RegistryID string
	// Registry is that registry, or nil when the BMC does not publish it; RegistryNote says why.
	Registry *Registry
	// RegistryNote explains a nil Registry; validation then falls back to the current attributes.
	RegistryNote string
	// Current is the Bios resource's Attributes: the values in effect.
	Current map[string]any
	// Settings is the Bios/Settings resource's Attributes as served. Some BMCs list only pending
	// changes there, others every attribute; nil when the BMC has no settings object.
	Settings map[string]any
	// Pending are the Settings entries whose value differs from Current: staged, applied at the next
	// reset.
	Pending map[string]any
	// SettingsURI is where pending settings are PATCHed.
	SettingsURI string
	// ApplyTimes are the @Redfish.SettingsApplyTime values the BMC supports, if it says.
	ApplyTimes []string

	settingsETag string
}

// biosDoc is the part of a Bios resource this package reads.
type biosDoc struct {
	ODataID           string `json:"@odata.id"`
	AttributeRegistry string
	Attributes        map[string]any
	Settings          struct {
		SettingsObject struct {
			ODataID string `json:"@odata.id"`
		}
		SupportedApplyTimes []string
	} `json:"@Redfish.Settings"`
}

// ReadBIOS reads the attribute registry, the current values and the pending settings.
func (c *Client) ReadBIOS(ctx context.Context) (*BIOSState, error) {
	api, err := c.session(ctx, "read BIOS")
	if err != nil {
		return nil, err
	}
	return c.readBIOS(api)
}

func (c *Client) readBIOS(api *gofish.APIClient) (*BIOSState, error) {
	var sys struct {
		Bios struct {
			ODataID string `json:"@odata.id"`
		}
	}
	if _, err := c.getJSON(api, "read system", c.systemPath, &sys); err != nil {
		return nil, err
	}
	if sys.Bios.ODataID == "" {
		return nil, &Error{Kind: KindProtocol, Endpoint: c.endpoint, Op: "read BIOS", Detail: "system " + c.systemID + " has no Bios resource: this BMC cannot manage BIOS settings"}
	}
	var bios biosDoc
	if _, err := c.getJSON(api, "read BIOS", sys.Bios.ODataID, &bios); err != nil {
		return nil, err
	}
	st := &BIOSState{
		SystemID:    c.systemID,
		RegistryID:  bios.AttributeRegistry,
		Current:     nonNil(bios.Attributes),
		SettingsURI: bios.Settings.SettingsObject.ODataID,
		ApplyTimes:  bios.Settings.SupportedApplyTimes,
	}
	if st.SettingsURI != "" && st.SettingsURI != bios.ODataID {
		var settings biosDoc
		etag, err := c.getJSON(api, "read BIOS settings", st.SettingsURI, &settings)
		var e *Error
		switch {
		case errors.As(err, &e) && e.StatusCode == http.StatusNotFound:
			// Some BMCs create the settings object only once something is staged.
			st.Settings = map[string]any{}
		case err != nil:
			return nil, err
		default:
			st.Settings = nonNil(settings.Attributes)
			st.settingsETag = etag
		}
	} else {
		// No separate settings object: the Bios resource itself takes the PATCH.
		st.SettingsURI = bios.ODataID
	}
	reg, note, err := c.findRegistry(api, bios.AttributeRegistry)
	if err != nil {
		return nil, err
	}
	st.Registry, st.RegistryNote = reg, note
	if reg == nil {
		c.log.Info("no BIOS attribute registry; validating names against current attributes only", "note", note)
	}
	st.Pending = pending(st)
	return st, nil
}

func nonNil(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// pending returns the Settings entries that differ from Current.
func pending(st *BIOSState) map[string]any {
	out := map[string]any{}
	for name, v := range st.Settings {
		t := st.attrType(name)
		want, _ := canon(t, v)
		have, ok := canon(t, st.Current[name])
		if !ok || want != have {
			out[name] = v
		}
	}
	return out
}

// attrType is the registry type of name, or the type inferred from its current value.
func (st *BIOSState) attrType(name string) AttributeType {
	if st.Registry != nil {
		if ra, ok := st.Registry.Attributes[name]; ok {
			return ra.Type
		}
	}
	return typeOfJSON(st.Current[name])
}

// Action is what a plan does with one attribute.
type Action string

const (
	// ActionNone: the current value is the wanted one and nothing else is staged.
	ActionNone Action = "InSync"
	// ActionSet: the value is PATCHed to the pending settings; the next reset applies it.
	ActionSet Action = "Set"
	// ActionAlreadyPending: the wanted value is already staged; only the reset is missing.
	ActionAlreadyPending Action = "AlreadyPending"
	// ActionOverridePending: the current value is right but a different value is staged, which the
	// next reset would apply; the wanted value is PATCHed over it.
	ActionOverridePending Action = "OverridePending"
)

// AttributeChange is the plan for one wanted attribute. Values are shown as text; a Password's are
// "<redacted>".
type AttributeChange struct {
	// Attribute is the attribute's name.
	Attribute string
	// Desired is the wanted value.
	Desired string
	// Current is the value in effect ("" with HasCurrent false when the BIOS does not report it).
	Current    string
	HasCurrent bool
	// Pending is the staged value, when HasPending.
	Pending    string
	HasPending bool
	// Action is what the plan does.
	Action Action
}

// Plan is the difference between the wanted attributes and the BIOS: what to PATCH, and whether
// the system needs a reset for the BIOS to match.
type Plan struct {
	// SystemID is the system the plan is for.
	SystemID string
	// Registry is the registry it was validated against ("" when the BMC has none).
	Registry string
	// Changes has one entry per wanted attribute, sorted by name.
	Changes []AttributeChange
	// ResetRequired says the BIOS will match only after a reset.
	ResetRequired bool

	patch      map[string]any
	patchNames []string // for logs, without values
	settings   string
	etag       string
	applyTime  string
}

// NeedsPatch says Apply has something to send.
func (p *Plan) NeedsPatch() bool { return len(p.patch) > 0 }

// InSync says the BIOS already matches: nothing to send, no reset.
func (p *Plan) InSync() bool { return !p.NeedsPatch() && !p.ResetRequired }

// Summary is a one-line description for logs and `tickstack plan`, without Password values.
func (p *Plan) Summary() string {
	if p.InSync() {
		return fmt.Sprintf("system %s: BIOS in sync (%d attribute(s))", p.SystemID, len(p.Changes))
	}
	s := fmt.Sprintf("system %s:", p.SystemID)
	for _, ch := range p.Changes {
		if ch.Action == ActionNone {
			continue
		}
		s += fmt.Sprintf(" %s %s->%s (%s);", ch.Attribute, orDash(ch.Current, ch.HasCurrent), ch.Desired, ch.Action)
	}
	if p.ResetRequired {
		s += " reset required"
	}
	return s
}

func orDash(s string, ok bool) string {
	if !ok {
		return "-"
	}
	return s
}

// ComputePlan validates wanted against st and diffs it with the current and pending values. It is
// pure: nothing is read or sent. A *ValidationError lists every invalid attribute.
func ComputePlan(st *BIOSState, wanted Attributes) (*Plan, error) {
	desired, err := validate(wanted, st.Registry, st.Current)
	if err != nil {
		return nil, err
	}
	p := &Plan{SystemID: st.SystemID, patch: map[string]any{}, settings: st.SettingsURI, etag: st.settingsETag}
	if st.Registry != nil {
		p.Registry = st.Registry.ID
	}
	if slices.Contains(st.ApplyTimes, "OnReset") {
		p.applyTime = "OnReset"
	}
	for _, name := range slices.Sorted(maps.Keys(desired)) {
		dv := desired[name]
		ch := AttributeChange{Attribute: name, Desired: redact(dv.canon, dv.secret)}
		cur, hasCur := canon(dv.typ, st.Current[name])
		pend, hasPend := st.Pending[name]
		pendCanon, _ := canon(dv.typ, pend)
		ch.Current, ch.HasCurrent = redact(cur, dv.secret), hasCur
		ch.Pending, ch.HasPending = redact(pendCanon, dv.secret), hasPend
		// A Password's current value is never reported (null), so it is always sent.
		curOK := hasCur && cur == dv.canon && !dv.secret
		switch {
		case curOK && !hasPend:
			ch.Action = ActionNone
		case curOK:
			ch.Action = ActionOverridePending
			p.patch[name] = dv.send
		case hasPend && pendCanon == dv.canon:
			ch.Action = ActionAlreadyPending
			p.ResetRequired = true
		default:
			ch.Action = ActionSet
			p.patch[name] = dv.send
			p.ResetRequired = true
		}
		p.Changes = append(p.Changes, ch)
	}
	p.patchNames = slices.Sorted(maps.Keys(p.patch))
	return p, nil
}

func redact(s string, secret bool) string {
	if secret {
		return "<redacted>"
	}
	return s
}

// Plan reads the BIOS and computes the plan for wanted. Nothing is changed.
func (c *Client) Plan(ctx context.Context, wanted Attributes) (*Plan, error) {
	st, err := c.ReadBIOS(ctx)
	if err != nil {
		return nil, err
	}
	return ComputePlan(st, wanted)
}

// Apply PATCHes the plan's pending settings to Bios/Settings and checks the BMC took them: each
// value must then show in the settings object or, on BMCs that apply at once, in the current
// attributes. With a plan that needs no PATCH it does nothing. It never resets the system: the
// coordinator calls Reset inside the node's reboot slot when plan.ResetRequired.
func (c *Client) Apply(ctx context.Context, p *Plan) error {
	if !p.NeedsPatch() {
		return nil
	}
	if p.SystemID != c.systemID {
		return fmt.Errorf("plan is for system %s, this client manages %s", p.SystemID, c.systemID)
	}
	api, err := c.session(ctx, "patch BIOS settings")
	if err != nil {
		return err
	}
	body := map[string]any{"Attributes": p.patch}
	if p.applyTime != "" {
		body["@Redfish.SettingsApplyTime"] = map[string]string{"ApplyTime": p.applyTime}
	}
	headers := map[string]string{}
	if p.etag != "" {
		headers["If-Match"] = p.etag
	}
	c.log.Info("patching BIOS settings", "system", c.systemID, "attributes", p.patchNames, "applyTime", p.applyTime)
	resp, err := api.PatchWithHeaders(p.settings, body, headers)
	if err != nil {
		return c.fail("patch BIOS settings", err)
	}
	_ = resp.Body.Close()

	st, err := c.readBIOS(api)
	if err != nil {
		return err
	}
	var missing []string
	for _, name := range p.patchNames {
		t := st.attrType(name)
		want, _ := canon(t, p.patch[name])
		if t == TypePassword {
			continue // never read back
		}
		inSettings, ok1 := canon(t, st.Settings[name])
		inCurrent, ok2 := canon(t, st.Current[name])
		if !(ok1 && inSettings == want) && !(ok2 && inCurrent == want) {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return &Error{Kind: KindProtocol, Endpoint: c.endpoint, Op: "patch BIOS settings",
			Detail: fmt.Sprintf("the BMC accepted the PATCH but shows neither pending nor current values for %v", missing)}
	}
	return nil
}

// AttributeState is the outcome of verifying one attribute.
type AttributeState string

const (
	// StateApplied: the value in effect is the wanted one.
	StateApplied AttributeState = "Applied"
	// StatePending: the wanted value is staged but not in effect; a reset has not applied it (yet).
	StatePending AttributeState = "Pending"
	// StateMismatch: the value in effect differs and the wanted value is not staged. Right after a
	// reset this means the BIOS refused or lost it; later it means drift (changed by hand or by a
	// BIOS update).
	StateMismatch AttributeState = "Mismatch"
	// StateMissing: the BIOS no longer reports the attribute.
	StateMissing AttributeState = "Missing"
	// StateUnverifiable: a Password, which BMCs never report.
	StateUnverifiable AttributeState = "Unverifiable"
)

// AttributeResult is the verification of one attribute.
type AttributeResult struct {
	// Attribute is the attribute's name.
	Attribute string
	// Desired is the wanted value, Observed the value in effect (Password values are redacted).
	Desired, Observed string
	// State is the outcome.
	State AttributeState
}

// Verification is the per-attribute outcome of comparing wanted values with the BIOS.
type Verification struct {
	// SystemID is the verified system.
	SystemID string
	// Results, sorted by attribute name.
	Results []AttributeResult
}

// AllApplied says every verifiable attribute has its wanted value in effect.
func (v *Verification) AllApplied() bool {
	for _, r := range v.Results {
		if r.State != StateApplied && r.State != StateUnverifiable {
			return false
		}
	}
	return true
}

// Drifted returns the results whose value in effect is not the wanted one and is not merely
// staged (Mismatch, Missing): on a node verified earlier, that is drift to report.
func (v *Verification) Drifted() []AttributeResult {
	var out []AttributeResult
	for _, r := range v.Results {
		if r.State == StateMismatch || r.State == StateMissing {
			out = append(out, r)
		}
	}
	return out
}

// VerifyState compares wanted with st. It is pure. Wanted values are interpreted as the registry
// types (as in ComputePlan) but not validated: a value that would not validate simply mismatches.
func VerifyState(st *BIOSState, wanted Attributes) *Verification {
	v := &Verification{SystemID: st.SystemID}
	for _, name := range slices.Sorted(maps.Keys(wanted)) {
		t := st.attrType(name)
		secret := t == TypePassword
		want, _ := canon(t, wanted[name])
		r := AttributeResult{Attribute: name, Desired: redact(want, secret)}
		cur, present := st.Current[name]
		have, hasValue := canon(t, cur)
		r.Observed = redact(have, secret)
		pend, hasPend := st.Pending[name]
		pendCanon, _ := canon(t, pend)
		switch {
		case secret:
			r.State = StateUnverifiable
		case !present:
			r.State = StateMissing
		case hasValue && have == want:
			r.State = StateApplied
		case hasPend && pendCanon == want:
			r.State = StatePending
		default:
			r.State = StateMismatch
		}
		v.Results = append(v.Results, r)
	}
	return v
}

// Verify reads the BIOS and compares it with wanted: after the reboot, to report per attribute, and
// later, to detect drift.
func (c *Client) Verify(ctx context.Context, wanted Attributes) (*Verification, error) {
	st, err := c.ReadBIOS(ctx)
	if err != nil {
		return nil, err
	}
	return VerifyState(st, wanted), nil
}
