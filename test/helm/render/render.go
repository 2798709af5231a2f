// Command render renders a Helm chart the way `helm template` does, without a
// helm binary: Go's text/template, the sprig function library, and the few
// functions and objects Helm adds that the Facet chart uses (include, tpl,
// toYaml, fromYaml, fromYamlArray, required, lookup; .Values, .Release,
// .Chart, .Capabilities, .Template). Sprig itself provides the certificate
// functions (genCA, genSignedCert), as it does for Helm. CRDs in crds/ are not
// rendered.
//
// Usage:
//
//	render --chart DIR [--values FILE]... [--name RELEASE] [--namespace NS]
//	       [--notes FILE] > manifests.yaml
//
// Build in GOPATH mode with Debian's packages:
//
//	GO111MODULE=off GOPATH=/usr/share/gocode go build -o render ./render
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig"
	"gopkg.in/yaml.v3"
)

// chartMetadata holds the Chart.yaml fields templates may read as .Chart.
type chartMetadata struct {
	APIVersion  string   `yaml:"apiVersion"`
	Name        string   `yaml:"name"`
	Version     string   `yaml:"version"`
	AppVersion  string   `yaml:"appVersion"`
	Description string   `yaml:"description"`
	Type        string   `yaml:"type"`
	KubeVersion string   `yaml:"kubeVersion"`
	Keywords    []string `yaml:"keywords"`
}

// apiVersions answers .Capabilities.APIVersions.Has like Helm's default set.
type apiVersions []string

func (a apiVersions) Has(version string) bool {
	for _, v := range a {
		if v == version {
			return true
		}
	}
	return false
}

type kubeVersion struct {
	Version, Major, Minor, GitVersion string
}

type capabilities struct {
	KubeVersion kubeVersion
	APIVersions apiVersions
}

type valueFiles []string

func (v *valueFiles) String() string     { return strings.Join(*v, ",") }
func (v *valueFiles) Set(s string) error { *v = append(*v, s); return nil }

func main() {
	chartDir := flag.String("chart", "", "chart directory (required)")
	release := flag.String("name", "release-name", "release name")
	namespace := flag.String("namespace", "default", "release namespace")
	notesOut := flag.String("notes", "", "also render templates/NOTES.txt into this file")
	var overrides valueFiles
	flag.Var(&overrides, "values", "values file merged over the chart's values.yaml (repeatable)")
	flag.Parse()
	if *chartDir == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: render --chart DIR [--values FILE]... [--name RELEASE] [--namespace NS] [--notes FILE]")
		os.Exit(2)
	}
	if err := run(*chartDir, *release, *namespace, overrides, *notesOut); err != nil {
		fmt.Fprintf(os.Stderr, "render: %v\n", err)
		os.Exit(1)
	}
}

func run(chartDir, release, namespace string, overrides []string, notesOut string) error {
	var chart chartMetadata
	if err := readYAML(filepath.Join(chartDir, "Chart.yaml"), &chart); err != nil {
		return err
	}
	if chart.Name == "" {
		return errors.New("Chart.yaml: name is required")
	}
	values := map[string]interface{}{}
	if err := readYAML(filepath.Join(chartDir, "values.yaml"), &values); err != nil {
		return err
	}
	for _, path := range overrides {
		override := map[string]interface{}{}
		if err := readYAML(path, &override); err != nil {
			return err
		}
		values = mergeValues(values, override)
	}

	tmpl, names, err := parseTemplates(chartDir, chart.Name)
	if err != nil {
		return err
	}
	top := map[string]interface{}{
		"Values": values,
		"Release": map[string]interface{}{
			"Name": release, "Namespace": namespace, "Service": "Helm",
			"IsInstall": true, "IsUpgrade": false, "Revision": 1,
		},
		"Chart": chart,
		"Capabilities": capabilities{
			KubeVersion: kubeVersion{Version: "v1.28.0", Major: "1", Minor: "28", GitVersion: "v1.28.0"},
			APIVersions: apiVersions{"v1", "apps/v1", "rbac.authorization.k8s.io/v1",
				"coordination.k8s.io/v1", "apiextensions.k8s.io/v1", "admissionregistration.k8s.io/v1",
				"facet.dev/v1alpha1"},
		},
	}
	var out bytes.Buffer
	for _, name := range names {
		base := filepath.Base(name)
		if strings.HasPrefix(base, "_") || base == "NOTES.txt" {
			continue
		}
		text, err := execute(tmpl, name, top)
		if err != nil {
			return err
		}
		for _, doc := range splitManifests(text) {
			fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", name, doc)
		}
	}
	if notesOut != "" {
		name := chart.Name + "/templates/NOTES.txt"
		if tmpl.Lookup(name) == nil {
			return fmt.Errorf("%s: no such template", name)
		}
		text, err := execute(tmpl, name, top)
		if err != nil {
			return err
		}
		if err := os.WriteFile(notesOut, []byte(text), 0o644); err != nil {
			return err
		}
	}
	_, err = os.Stdout.Write(out.Bytes())
	return err
}

func readYAML(path string, out interface{}) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	return nil
}

// mergeValues merges override into base as Helm does: maps merge key by key,
// any other value replaces, and null deletes the key.
func mergeValues(base, override map[string]interface{}) map[string]interface{} {
	for key, value := range override {
		if value == nil {
			delete(base, key)
			continue
		}
		overrideMap, isMap := value.(map[string]interface{})
		baseMap, baseIsMap := base[key].(map[string]interface{})
		if isMap && baseIsMap {
			base[key] = mergeValues(baseMap, overrideMap)
		} else {
			base[key] = value
		}
	}
	return base
}

// parseTemplates parses every file under templates/ into one template set,
// named "<chart>/templates/<path>" as Helm names them; names come back sorted.
func parseTemplates(chartDir, chartName string) (*template.Template, []string, error) {
	tmpl := template.New("chart").Option("missingkey=zero")
	funcs := sprig.TxtFuncMap()
	// Helm removes these for hermetic rendering.
	delete(funcs, "env")
	delete(funcs, "expandenv")
	for name, fn := range helmFuncs(tmpl) {
		funcs[name] = fn
	}
	tmpl.Funcs(funcs)

	root := filepath.Join(chartDir, "templates")
	var names []string
	err := filepath.WalkDir(root, func(path string, entry fs.DirEntry, err error) error {
		if err != nil || entry.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		name := chartName + "/templates/" + filepath.ToSlash(rel)
		if _, err := tmpl.New(name).Parse(string(data)); err != nil {
			return err
		}
		names = append(names, name)
		return nil
	})
	sort.Strings(names)
	return tmpl, names, err
}

func execute(tmpl *template.Template, name string, top map[string]interface{}) (string, error) {
	data := map[string]interface{}{}
	for key, value := range top {
		data[key] = value
	}
	data["Template"] = map[string]interface{}{
		"Name": name, "BasePath": name[:strings.Index(name, "/templates/")+len("/templates")],
	}
	var buf bytes.Buffer
	if err := tmpl.ExecuteTemplate(&buf, name, data); err != nil {
		return "", err
	}
	// Helm's engine prints missing values as empty strings.
	return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
}

var separator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// splitManifests splits a rendered file into its non-empty YAML documents.
func splitManifests(text string) []string {
	var docs []string
	for _, doc := range separator.Split(text, -1) {
		if strings.TrimSpace(doc) != "" {
			docs = append(docs, strings.Trim(doc, "\n"))
		}
	}
	return docs
}

// helmFuncs returns the functions Helm adds to sprig that the chart uses.
func helmFuncs(tmpl *template.Template) template.FuncMap {
	return template.FuncMap{
		"include": func(name string, data interface{}) (string, error) {
			var buf bytes.Buffer
			if err := tmpl.ExecuteTemplate(&buf, name, data); err != nil {
				return "", err
			}
			return buf.String(), nil
		},
		"tpl": func(text string, data interface{}) (string, error) {
			clone, err := tmpl.Clone()
			if err != nil {
				return "", err
			}
			parsed, err := clone.New("tpl").Parse(text)
			if err != nil {
				return "", err
			}
			var buf bytes.Buffer
			if err := parsed.Execute(&buf, data); err != nil {
				return "", err
			}
			return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
		},
		"toYaml": func(v interface{}) string {
			var buf bytes.Buffer
			encoder := yaml.NewEncoder(&buf)
			encoder.SetIndent(2)
			if err := encoder.Encode(v); err != nil {
				return "" // Helm swallows the error the same way.
			}
			return strings.TrimSuffix(buf.String(), "\n")
		},
		"fromYamlArray": func(text string) []interface{} {
			out := []interface{}{}
			if err := yaml.Unmarshal([]byte(text), &out); err != nil {
				out = []interface{}{err.Error()}
			}
			return out
		},
		"fromYaml": func(text string) map[string]interface{} {
			out := map[string]interface{}{}
			if err := yaml.Unmarshal([]byte(text), &out); err != nil {
				out["Error"] = err.Error()
			}
			return out
		},
		"required": func(message string, value interface{}) (interface{}, error) {
			if value == nil {
				return nil, errors.New(message)
			}
			if s, ok := value.(string); ok && s == "" {
				return nil, errors.New(message)
			}
			return value, nil
		},
		// `helm template` has no cluster to look objects up in.
		"lookup": func(apiVersion, kind, namespace, name string) (map[string]interface{}, error) {
			return map[string]interface{}{}, nil
		},
	}
}
