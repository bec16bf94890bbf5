// Command render renders a Helm chart the way `helm template` does, for the
// tests of deploy/helm/gpulens on machines without a helm binary.
//
//	render [-f values.yaml]... [--set key.path=value]... [--name RELEASE]
//	       [--namespace NS] CHART_DIR
//
// It implements what the chart uses, with Helm 3's semantics:
//   - values: the chart's values.yaml, then each -f file, then each --set, merged
//     the way Helm coalesces them (maps merge key by key, a list or scalar
//     replaces, null deletes the chart's default);
//   - objects: .Values, .Release (Name, Namespace, Service "Helm", IsInstall,
//     Revision 1), .Chart (Chart.yaml's fields, capitalised), .Template (Name,
//     BasePath), .Files.Get, .Capabilities.KubeVersion;
//   - functions: Sprig's (without env/expandenv, as Helm), include, tpl,
//     required, fail, toYaml, fromYaml, toJson, fromJson;
//   - output: every template outside _* files under templates/, in name order,
//     each as "---\n# Source: CHART/templates/FILE\n..."; blank documents are
//     dropped, "<no value>" becomes "" (Helm's missingkey behaviour).
//
// --set takes dotted paths only (a.b.c=v; true/false/null/integers typed as
// Helm does); Helm's list indexes and escapes are not implemented. Exits 1
// with the template's file:line and the problem on any render error, 2 on
// bad usage.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig"
	yaml "gopkg.in/yaml.v2"
)

type values = map[string]interface{}

// normalize turns YAML-decoded data into JSON types (what Helm's values are:
// map[string]interface{}, []interface{}, float64, string, bool, nil).
func normalize(v interface{}) (interface{}, error) {
	b, err := json.Marshal(jsonable(v))
	if err != nil {
		return nil, err
	}
	var out interface{}
	err = json.Unmarshal(b, &out)
	return out, err
}

func jsonable(v interface{}) interface{} {
	switch t := v.(type) {
	case map[interface{}]interface{}:
		m := map[string]interface{}{}
		for k, x := range t {
			m[fmt.Sprint(k)] = jsonable(x)
		}
		return m
	case map[string]interface{}:
		m := map[string]interface{}{}
		for k, x := range t {
			m[k] = jsonable(x)
		}
		return m
	case []interface{}:
		l := make([]interface{}, len(t))
		for i, x := range t {
			l[i] = jsonable(x)
		}
		return l
	}
	return v
}

func readYAML(path string) (values, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var raw interface{}
	if err := yaml.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if raw == nil {
		return values{}, nil
	}
	n, err := normalize(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	m, ok := n.(map[string]interface{})
	if !ok {
		return nil, fmt.Errorf("%s: top level is not a map", path)
	}
	return m, nil
}

// coalesce merges src over dst as Helm does for user values over defaults.
func coalesce(dst, src values) values {
	for k, sv := range src {
		if sv == nil {
			delete(dst, k)
			continue
		}
		sm, sok := sv.(map[string]interface{})
		dm, dok := dst[k].(map[string]interface{})
		if sok && dok {
			dst[k] = coalesce(dm, sm)
		} else {
			dst[k] = sv
		}
	}
	return dst
}

// setValue applies one --set a.b.c=v.
func setValue(vals values, expr string) error {
	eq := strings.IndexByte(expr, '=')
	if eq <= 0 {
		return fmt.Errorf("--set %q: want key=value", expr)
	}
	keys := strings.Split(expr[:eq], ".")
	raw := expr[eq+1:]
	var v interface{} = raw
	switch {
	case raw == "true":
		v = true
	case raw == "false":
		v = false
	case raw == "null":
		v = nil
	default:
		if i, err := strconv.ParseInt(raw, 10, 64); err == nil {
			v = float64(i)
		}
	}
	m := vals
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(map[string]interface{})
		if !ok {
			next = map[string]interface{}{}
			m[k] = next
		}
		m = next
	}
	last := keys[len(keys)-1]
	if v == nil {
		delete(m, last)
	} else {
		m[last] = v
	}
	return nil
}

// toYAML is Helm's toYaml: JSON round trip, sorted keys, no trailing newline.
func toYAML(v interface{}) string {
	b, err := json.Marshal(jsonable(v))
	if err != nil {
		return ""
	}
	var generic interface{}
	if err := yaml.Unmarshal(b, &generic); err != nil {
		return ""
	}
	out, err := yaml.Marshal(generic)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(out), "\n")
}

func fromYAML(s string) map[string]interface{} {
	var raw interface{}
	m := map[string]interface{}{}
	if err := yaml.Unmarshal([]byte(s), &raw); err != nil {
		m["Error"] = err.Error()
		return m
	}
	if n, err := normalize(raw); err == nil {
		if mm, ok := n.(map[string]interface{}); ok {
			return mm
		}
	}
	return m
}

type files struct{ root string }

// Get returns a chart file's contents ("" when missing), as Helm's .Files.Get.
func (f files) Get(name string) string {
	b, err := os.ReadFile(filepath.Join(f.root, filepath.FromSlash(name)))
	if err != nil {
		return ""
	}
	return string(b)
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

func usage(msg string) {
	fmt.Fprintf(os.Stderr, "render: %s\nusage: render [-f values.yaml]... [--set k=v]... [--name R] [--namespace NS] CHART_DIR\n", msg)
	os.Exit(2)
}

func main() {
	var valueFiles, sets []string
	release, namespace, chartDir := "gpulens", "default", ""
	args := os.Args[1:]
	for i := 0; i < len(args); i++ {
		a := args[i]
		next := func() string {
			if i+1 >= len(args) {
				usage(a + " needs a value")
			}
			i++
			return args[i]
		}
		switch a {
		case "-f", "--values":
			valueFiles = append(valueFiles, next())
		case "--set":
			sets = append(sets, next())
		case "--name":
			release = next()
		case "--namespace", "-n":
			namespace = next()
		default:
			if strings.HasPrefix(a, "-") || chartDir != "" {
				usage("unexpected argument " + a)
			}
			chartDir = a
		}
	}
	if chartDir == "" {
		usage("no chart directory")
	}
	out, err := render(chartDir, release, namespace, valueFiles, sets)
	if err != nil {
		fmt.Fprintln(os.Stderr, "render:", err)
		os.Exit(1)
	}
	os.Stdout.WriteString(out)
}

func render(chartDir, release, namespace string, valueFiles, sets []string) (string, error) {
	chartMeta, err := readYAML(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		return "", err
	}
	if chartMeta["apiVersion"] != "v2" {
		return "", fmt.Errorf("Chart.yaml: apiVersion %v, want v2", chartMeta["apiVersion"])
	}
	for _, k := range []string{"name", "version"} {
		if s, _ := chartMeta[k].(string); s == "" {
			return "", fmt.Errorf("Chart.yaml: %s is required", k)
		}
	}
	chart := map[string]interface{}{}
	for k, v := range chartMeta { // Helm exposes Chart.yaml's keys capitalised
		chart[strings.ToUpper(k[:1])+k[1:]] = v
	}
	vals, err := readYAML(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		return "", err
	}
	for _, f := range valueFiles {
		user, err := readYAML(f)
		if err != nil {
			return "", err
		}
		vals = coalesce(vals, user)
	}
	for _, s := range sets {
		if err := setValue(vals, s); err != nil {
			return "", err
		}
	}
	name := chartMeta["name"].(string)
	top := map[string]interface{}{
		"Values":  vals,
		"Chart":   chart,
		"Release": map[string]interface{}{"Name": release, "Namespace": namespace, "Service": "Helm", "IsInstall": true, "IsUpgrade": false, "Revision": 1},
		"Files":   files{chartDir},
		"Capabilities": map[string]interface{}{
			"KubeVersion": map[string]interface{}{"Version": "v1.29.0", "Major": "1", "Minor": "29"},
		},
	}

	tmplDir := filepath.Join(chartDir, "templates")
	var paths []string
	err = filepath.Walk(tmplDir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".tpl") || strings.HasSuffix(p, ".txt")) {
			paths = append(paths, p)
		}
		return err
	})
	if err != nil {
		return "", err
	}
	sort.Strings(paths)

	root := template.New("gotpl").Option("missingkey=zero")
	funcs := sprig.TxtFuncMap()
	delete(funcs, "env")
	delete(funcs, "expandenv")
	includeDepth := 0
	funcs["include"] = func(n string, data interface{}) (string, error) {
		if includeDepth > 100 {
			return "", fmt.Errorf("include %q: recursion too deep", n)
		}
		includeDepth++
		defer func() { includeDepth-- }()
		var buf bytes.Buffer
		if err := root.ExecuteTemplate(&buf, n, data); err != nil {
			return "", err
		}
		return buf.String(), nil
	}
	funcs["tpl"] = func(text string, data interface{}) (string, error) {
		t, err := root.Clone()
		if err != nil {
			return "", err
		}
		t, err = t.New("tpl").Parse(text)
		if err != nil {
			return "", err
		}
		var buf bytes.Buffer
		if err := t.Execute(&buf, data); err != nil {
			return "", err
		}
		return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
	}
	funcs["required"] = func(msg string, v interface{}) (interface{}, error) {
		if v == nil {
			return v, fmt.Errorf(msg)
		}
		if s, ok := v.(string); ok && s == "" {
			return v, fmt.Errorf(msg)
		}
		return v, nil
	}
	funcs["fail"] = func(msg string) (string, error) { return "", fmt.Errorf(msg) }
	funcs["toYaml"] = toYAML
	funcs["fromYaml"] = fromYAML
	funcs["toJson"] = func(v interface{}) string {
		b, err := json.Marshal(jsonable(v))
		if err != nil {
			return ""
		}
		return string(b)
	}
	funcs["fromJson"] = func(s string) map[string]interface{} {
		m := map[string]interface{}{}
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			m["Error"] = err.Error()
		}
		return m
	}
	root.Funcs(funcs)

	rel := func(p string) string {
		r, _ := filepath.Rel(chartDir, p)
		return name + "/" + filepath.ToSlash(r)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return "", err
		}
		if _, err := root.New(rel(p)).Parse(string(b)); err != nil {
			return "", err
		}
	}

	var out strings.Builder
	blank := regexp.MustCompile(`^\s*$`)
	for _, p := range paths {
		base := filepath.Base(p)
		if strings.HasPrefix(base, "_") || strings.HasSuffix(base, ".txt") {
			continue // partials and NOTES.txt are not manifests
		}
		n := rel(p)
		top["Template"] = map[string]interface{}{"Name": n, "BasePath": name + "/templates"}
		var buf bytes.Buffer
		if err := root.ExecuteTemplate(&buf, n, top); err != nil {
			return "", err
		}
		text := strings.ReplaceAll(buf.String(), "<no value>", "")
		for _, doc := range splitDocs(text) {
			if blank.MatchString(doc) || onlyComments(doc) {
				continue
			}
			fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", n, strings.TrimRight(strings.TrimPrefix(doc, "\n"), "\n"))
		}
	}
	return out.String(), nil
}

// splitDocs splits a rendered file at lines that are exactly "---".
func splitDocs(s string) []string {
	var docs []string
	var cur []string
	for _, line := range strings.Split(s, "\n") {
		if strings.TrimRight(line, " ") == "---" {
			docs = append(docs, strings.Join(cur, "\n"))
			cur = nil
			continue
		}
		cur = append(cur, line)
	}
	return append(docs, strings.Join(cur, "\n"))
}

func onlyComments(doc string) bool {
	for _, line := range strings.Split(doc, "\n") {
		t := strings.TrimSpace(line)
		if t != "" && !strings.HasPrefix(t, "#") {
			return false
		}
	}
	return true
}
