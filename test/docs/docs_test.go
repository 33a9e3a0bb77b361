// Package docs checks that the documentation stands on its own and keeps up with the code: every
// condition type and reason the operator and the agent write is explained in docs/install.md, every
// page of docs/ is reachable from the index docs/README.md, no link leaves the repository or
// points at a file or a section that is not there, and every section the code cites
// (docs/NAME.md "Section") is on the page it names.
package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// root is the repository, seen from test/docs.
const root = "../.."

// statusDoc is the page that explains every condition and reason.
const statusDoc = "docs/install.md"

// reasonPackages are the packages whose reason constants end up in a status condition, a Node
// condition, status.runReason or an event; "controllers/..." is every controller package.
var reasonPackages = []string{"api/v1alpha1", "internal/agent", "internal/ptp", "controllers", "controllers/*"}

// collected is what the Go sources say a status can show.
type collected struct {
	// reasons maps each reason string to where it is declared.
	reasons map[string]string
	// types maps each condition type to where it is declared.
	types map[string]string
}

// collect reads the non-test Go files of the reason packages: constants named Reason* or
// RunReason*, constants of a block documented as condition types, the string literals given to a
// Reason field, and the string literals the agent's rebootReason returns.
func collect(t *testing.T) collected {
	t.Helper()
	c := collected{reasons: map[string]string{}, types: map[string]string{}}
	fset := token.NewFileSet()
	for _, dir := range reasonPackages {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") || strings.HasPrefix(filepath.Base(path), "zz_generated") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			where := func(n ast.Node) string {
				p := fset.Position(n.Pos())
				rel, _ := filepath.Rel(root, p.Filename)
				return rel + ":" + strconv.Itoa(p.Line)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.GenDecl:
					if n.Tok != token.CONST {
						return true
					}
					types := n.Doc != nil && strings.HasPrefix(n.Doc.Text(), "Condition types")
					for _, spec := range n.Specs {
						vs := spec.(*ast.ValueSpec)
						for i, name := range vs.Names {
							if i >= len(vs.Values) {
								continue
							}
							v, ok := stringLit(vs.Values[i])
							if !ok {
								continue
							}
							switch {
							case types:
								c.types[v] = where(name)
							case strings.HasPrefix(name.Name, "Reason") || strings.HasPrefix(name.Name, "RunReason"):
								c.reasons[v] = where(name)
							}
						}
					}
				case *ast.KeyValueExpr:
					if k, ok := n.Key.(*ast.Ident); ok && k.Name == "Reason" {
						if v, ok := stringLit(n.Value); ok {
							c.reasons[v] = where(n)
						}
					}
				case *ast.FuncDecl:
					if n.Name.Name == "rebootReason" {
						ast.Inspect(n.Body, func(m ast.Node) bool {
							if r, ok := m.(*ast.ReturnStmt); ok && len(r.Results) == 1 {
								if v, ok := stringLit(r.Results[0]); ok {
									c.reasons[v] = where(r)
								}
							}
							return true
						})
					}
				}
				return true
			})
		}
	}
	return c
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	v, err := strconv.Unquote(lit.Value)
	return v, err == nil && v != ""
}

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestEveryReasonIsDocumented fails when a condition reason or type the code can write is not
// explained in docs/install.md: a reason must appear in backquotes, a condition type as the first
// cell of a table row.
func TestEveryReasonIsDocumented(t *testing.T) {
	c := collect(t)
	doc := read(t, statusDoc)
	// The parser found what it must: a sample of each kind, so that a broken walk cannot pass.
	for _, want := range []string{"NoNodesMatched", "WaitingForNodeFacts", "DriftReported", "VerifyingKubelet", "NotReported", "Synchronized", "NodesInconclusive", "CredentialsSecretInvalid", "Schedule"} {
		if _, ok := c.reasons[want]; !ok {
			t.Fatalf("the scan of %v missed the reason %q: the test's walk is broken", reasonPackages, want)
		}
	}
	for _, want := range []string{"Ready", "Applied", "TimeSynced", "BMCReachable", "Passed"} {
		if _, ok := c.types[want]; !ok {
			t.Fatalf("the scan of %v missed the condition type %q: the test's walk is broken", reasonPackages, want)
		}
	}
	var missing []string
	for r, at := range c.reasons {
		if !strings.Contains(doc, "`"+r+"`") {
			missing = append(missing, "reason "+r+" ("+at+")")
		}
	}
	for typ, at := range c.types {
		if !regexp.MustCompile(`(?m)^\| ` + regexp.QuoteMeta(typ) + ` \|`).MatchString(doc) {
			missing = append(missing, "condition type "+typ+" ("+at+")")
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("%s is not explained in %s (Reading status): add it with its meaning and what to do", m, statusDoc)
	}
}

// docPages lists docs/*.md.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) < 10 {
		t.Fatalf("found %d pages in docs/: the test looks in the wrong place", len(pages))
	}
	return pages
}

// TestIndexLinksEveryPage fails when a page of docs/ is missing from the index docs/README.md.
func TestIndexLinksEveryPage(t *testing.T) {
	index := read(t, "docs/README.md")
	for _, p := range docPages(t) {
		name := filepath.Base(p)
		if name == "README.md" {
			continue
		}
		if !strings.Contains(index, "]("+name+")") && !strings.Contains(index, "]("+name+"#") {
			t.Errorf("docs/%s is not linked from docs/README.md: add it to the index, in the reading order it belongs to", name)
		}
	}
}

// mdLink is an inline Markdown link's target.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// code matches fenced code blocks and inline code spans, whose brackets are not links.
var code = regexp.MustCompile("(?s)```.*?```|`[^`\n]*`")

// TestLinksStayInTheRepository fails when a link of README.md, CHANGELOG.md or docs/ points outside
// the repository (a reader of a release archive has nothing there) or at a file that does not exist.
func TestLinksStayInTheRepository(t *testing.T) {
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	eachDocLink(t, func(p, rel, link string) {
		if strings.Contains(link, "://") || strings.HasPrefix(link, "#") || strings.HasPrefix(link, "mailto:") {
			return
		}
		target, _, _ := strings.Cut(link, "#")
		full, err := filepath.Abs(filepath.Join(filepath.Dir(p), target))
		if err != nil {
			t.Fatal(err)
		}
		if full != abs && !strings.HasPrefix(full, abs+string(filepath.Separator)) {
			t.Errorf("%s links %q, outside the repository: cite the source by title instead", rel, link)
			return
		}
		if _, err := os.Stat(full); err != nil {
			t.Errorf("%s links %q, which does not exist", rel, link)
		}
	})
}

// eachDocPage calls visit with each page of docs/, README.md and CHANGELOG.md: its path, its path
// relative to the repository root, its text.
func eachDocPage(t *testing.T, visit func(page, rel, text string)) {
	t.Helper()
	pages := append(docPages(t), filepath.Join(root, "README.md"), filepath.Join(root, "CHANGELOG.md"))
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		visit(p, rel, string(b))
	}
}

// eachDocLink calls visit with each Markdown link (outside code) of those pages: the page's path,
// its path relative to the repository root, the link's target.
func eachDocLink(t *testing.T, visit func(page, rel, link string)) {
	t.Helper()
	eachDocPage(t, func(p, rel, text string) {
		for _, m := range mdLink.FindAllStringSubmatch(code.ReplaceAllString(text, ""), -1) {
			visit(p, rel, m[1])
		}
	})
}

// heading is a Markdown heading line; anchorTag an explicit anchor (<a id="...">).
var (
	heading   = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *#*$`)
	anchorTag = regexp.MustCompile(`<a id="([^"]+)">`)
	boldLead  = regexp.MustCompile(`\*\*([^*]+)\*\*`)
	notSlug   = regexp.MustCompile(`[^\p{L}\p{N}\- _]`)
)

// slug is the anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens.
func slug(h string) string {
	return strings.ReplaceAll(notSlug.ReplaceAllString(strings.ToLower(strings.TrimSpace(h)), ""), " ", "-")
}

// anchors lists the fragments a page answers to: its headings' slugs (a repeated one with -1, -2,
// ... as GitHub numbers them) and its explicit anchors. Code blocks are left out.
func anchors(text string) map[string]bool {
	text = regexp.MustCompile("(?s)```.*?```").ReplaceAllString(text, "")
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range heading.FindAllStringSubmatch(text, -1) {
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	for _, m := range anchorTag.FindAllStringSubmatch(text, -1) {
		out[m[1]] = true
	}
	return out
}

// TestLinkedSectionsExist fails when a link of README.md, CHANGELOG.md or docs/ names a section
// (#fragment) its page does not have: a section that moved to another page, or was renamed.
func TestLinkedSectionsExist(t *testing.T) {
	cache := map[string]map[string]bool{}
	eachDocLink(t, func(p, rel, link string) {
		file, frag, ok := strings.Cut(link, "#")
		if !ok || strings.Contains(file, "://") || (file != "" && !strings.HasSuffix(file, ".md")) {
			return
		}
		target := p
		if file != "" {
			target = filepath.Join(filepath.Dir(p), file)
		}
		a, ok := cache[target]
		if !ok {
			tb, err := os.ReadFile(target)
			if err != nil {
				return // TestLinksStayInTheRepository reports it
			}
			a = anchors(string(tb))
			cache[target] = a
		}
		if !a[frag] {
			t.Errorf("%s links %q: that page has no section %q (moved or renamed? link its new place)", rel, link, frag)
		}
	})
}

// citation is how code cites a section of a page: docs/NAME.md "Section" (or docs/NAME.md, "Section").
var citation = regexp.MustCompile(`docs/([a-z0-9-]+\.md),? \\?"([^"\\]+)\\?"`)

// sourceExt are the files whose comments and messages cite the docs.
var sourceExt = map[string]bool{".go": true, ".c": true, ".h": true, ".cc": true, ".sh": true, ".py": true, ".yaml": true, ".mk": true}

// TestCitedSectionsExist fails when code cites a section of a page that the page does not have: a
// section that moved to another page (docs/dataplane.md's design to docs/dataplane-design.md, say)
// or was renamed. The cited name must be found in a heading or a bold paragraph lead of the page.
func TestCitedSectionsExist(t *testing.T) {
	titles := map[string][]string{}
	titlesOf := func(page string) ([]string, bool) {
		if ts, ok := titles[page]; ok {
			return ts, true
		}
		b, err := os.ReadFile(filepath.Join(root, "docs", page))
		if err != nil {
			return nil, false
		}
		var ts []string
		for _, m := range heading.FindAllStringSubmatch(string(b), -1) {
			ts = append(ts, m[1])
		}
		for _, m := range boldLead.FindAllStringSubmatch(string(b), -1) {
			ts = append(ts, m[1])
		}
		for i := range ts {
			ts[i] = strings.ToLower(strings.ReplaceAll(ts[i], "`", ""))
		}
		titles[page] = ts
		return ts, true
	}
	// check reports a citation m (page, section) found at where that names no heading or bold lead.
	check := func(where string, m []string) {
		ts, ok := titlesOf(m[1])
		if !ok {
			t.Errorf("%s cites docs/%s, which does not exist", where, m[1])
			return
		}
		want := strings.ToLower(m[2])
		for _, title := range ts {
			if strings.Contains(title, want) {
				return
			}
		}
		t.Errorf("%s cites docs/%s %q, which has no such section (moved or renamed? cite its new page and title)", where, m[1], m[2])
	}
	checked := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			switch {
			case path != root && strings.HasPrefix(name, "."), name == "bin", name == "build", name == "node_modules",
				name == "testbin", name == "vendor", name == "third_party", path == filepath.Join(root, "docs"):
				return filepath.SkipDir
			}
			return nil
		}
		if !sourceExt[filepath.Ext(name)] && name != "Makefile" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range citation.FindAllStringSubmatch(line, -1) {
				checked++
				check(rel+":"+strconv.Itoa(i+1), m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The pages cite each other the same way, across line breaks.
	eachDocPage(t, func(_, rel, text string) {
		for _, m := range citation.FindAllStringSubmatch(strings.Join(strings.Fields(text), " "), -1) {
			checked++
			check(rel, m)
		}
	})
	if checked < 20 {
		t.Fatalf("found %d citations: the test looks in the wrong place", checked)
	}
}
