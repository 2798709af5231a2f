// Command check asserts what the Facet chart must render: well-formed
// objects, a locked-down Deployment running `facet controller` with the
// flags the values ask for, least-privilege RBAC, a Service for gRPC, the
// admission webhook and its certificates (webhook.go), the xDS and admin
// ports' TLS and the NetworkPolicy (tls.go), and a NOTES.txt with a valid
// client bootstrap, and the relay tier when it is on (relay.go). It prints
// every failure and exits 1 if there is one.
//
// Usage:
//
//	check --manifests FILE --notes FILE --release-namespace NS --replicas N
//	      [--namespaces a,b] [--lease NAME] [--arg ARG]... [--absent-flag FLAG]...
//	      [--authorities NAME,...] [--bootstrap-authorities AUTHORITY,...]
//	      [--server-uri HOST:PORT] [--authorities-out FILE]
//	      [--webhook off|generated|certManager] [--failure-policy Fail|Ignore]
//	      [--webhook-timeout N] [--webhook-port N] [--issuer KIND/NAME]
//	      [--webhook-out DIR] [--xds-tls none|secret|certManager] [--xds-tls-secret NAME]
//	      [--xds-issuer KIND/NAME] [--xds-client-ca SECRET/KEY]
//	      [--admin-tls none|secret|certManager] [--admin-tls-secret NAME]
//	      [--admin-issuer KIND/NAME] [--admin-service] [--network-policy]
//	      [--xds-peers N] [--admin-peers N] [--relay off|Deployment|DaemonSet]
//	      [--relay-replicas N] [--relay-upstream HOST:PORT] [--relay-creds insecure|tls]
//	      [--relay-ca-secret NAME] [--relay-arg ARG]... [--relay-config-out FILE]
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// The flags of `facet controller`; anything else in the args is a typo.
var controllerFlags = map[string]bool{
	"--kubeconfig": true, "--namespaces": true, "--xds-address": true, "--admin-address": true,
	"--node-metadata-params": true, "--allow-old-style-names": true, "--leader-election": true,
	"--leader-election-namespace": true, "--leader-election-lease": true, "--log-level": true,
	"--webhook-address": true, "--webhook-tls-cert": true, "--webhook-tls-key": true,
	"--xds-tls-cert": true, "--xds-tls-key": true, "--xds-tls-client-ca": true,
	"--csds-readers": true, "--admin-tls-cert": true, "--admin-tls-key": true,
	"--gateway-api": true, "--cluster-domain": true, "--gateway-client-namespace-param": true,
}

var namespacedKinds = map[string]bool{
	"Deployment": true, "Service": true, "ServiceAccount": true, "Role": true, "RoleBinding": true,
	"Secret": true, "Certificate": true, "Issuer": true, "NetworkPolicy": true,
	"DaemonSet": true, "ConfigMap": true,
}

type object = map[string]interface{}

type checker struct{ failures []string }

// failf records a failure once, however many grants or fields repeat it.
func (c *checker) failf(format string, args ...interface{}) {
	failure := fmt.Sprintf(format, args...)
	if !contains(c.failures, failure) {
		c.failures = append(c.failures, failure)
	}
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, " ") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

type options struct {
	manifests, notes, releaseNamespace, lease, serverURI, authoritiesOut string
	replicas                                                             int
	namespaces, authorities, bootstrapAuthorities                        []string
	args, absentFlags                                                    stringList
	// The webhook: "off", "generated" or "certManager"; its failurePolicy,
	// timeoutSeconds and container port; where to write its files.
	webhook, failurePolicy, webhookOut string
	webhookTimeout, webhookPort        int
	issuer                             string
	// The xDS and admin ports' TLS, the Service's admin port, the NetworkPolicy (tls.go).
	tls tlsOptions
	// Whether gatewayAPI.enabled: its RBAC rules and install notes.
	gatewayAPI bool
	// clusterDomain: in the Service's DNS names certificates are issued for.
	clusterDomain string
	// The relay tier (relay.go).
	relay relayOptions
}

func main() {
	var o options
	var namespaces, authorities, bootstrapAuthorities string
	flag.StringVar(&o.manifests, "manifests", "", "rendered manifests")
	flag.StringVar(&o.notes, "notes", "", "rendered NOTES.txt")
	flag.StringVar(&o.releaseNamespace, "release-namespace", "", "the release namespace")
	flag.IntVar(&o.replicas, "replicas", -1, "expected replicas")
	flag.StringVar(&namespaces, "namespaces", "", "expected watched namespaces (empty: all)")
	flag.StringVar(&o.lease, "lease", "", "expected lease name (empty: leader election off)")
	flag.Var(&o.args, "arg", "an argument the container must have (repeatable)")
	flag.Var(&o.absentFlags, "absent-flag", "a flag the container must not have (repeatable)")
	flag.StringVar(&authorities, "authorities", "", "expected XdsAuthority names")
	flag.StringVar(&bootstrapAuthorities, "bootstrap-authorities", "", "expected bootstrap authorities")
	flag.StringVar(&o.serverURI, "server-uri", "", "expected xDS server URI in the bootstrap")
	flag.StringVar(&o.authoritiesOut, "authorities-out", "", "write the XdsAuthority documents here")
	flag.StringVar(&o.webhook, "webhook", "generated", "expected webhook certificates: off, generated or certManager")
	flag.StringVar(&o.failurePolicy, "failure-policy", "Fail", "expected webhook failurePolicy")
	flag.IntVar(&o.webhookTimeout, "webhook-timeout", 10, "expected webhook timeoutSeconds")
	flag.IntVar(&o.webhookPort, "webhook-port", 9443, "expected webhook container port")
	flag.StringVar(&o.issuer, "issuer", "", "expected cert-manager issuerRef kind/name (empty: the chart's self-signed Issuer)")
	flag.StringVar(&o.webhookOut, "webhook-out", "", "write the webhook's tls.crt, tls.key and ValidatingWebhookConfiguration here (a directory)")
	flag.StringVar(&o.tls.xds, "xds-tls", "none", "expected xds.tls.certificates: none, secret or certManager")
	flag.StringVar(&o.tls.xdsSecret, "xds-tls-secret", "", "expected Secret of the xDS certificate")
	flag.StringVar(&o.tls.xdsIssuer, "xds-issuer", "", "expected issuerRef kind/name of the xDS Certificate")
	flag.StringVar(&o.tls.xdsClientCA, "xds-client-ca", "", "expected xDS client CA as secret/key (empty: none)")
	flag.StringVar(&o.tls.admin, "admin-tls", "none", "expected admin.tls.certificates: none, secret or certManager")
	flag.StringVar(&o.tls.adminSecret, "admin-tls-secret", "", "expected Secret of the admin certificate")
	flag.StringVar(&o.tls.adminIssuer, "admin-issuer", "", "expected issuerRef kind/name of the admin Certificate")
	flag.BoolVar(&o.tls.adminService, "admin-service", false, "expect the Service to expose the admin port")
	flag.BoolVar(&o.tls.networkPolicy, "network-policy", false, "expect a NetworkPolicy")
	flag.IntVar(&o.tls.xdsPeers, "xds-peers", 0, "expected `from` peers of the xDS port (0: every source)")
	flag.IntVar(&o.tls.adminPeers, "admin-peers", 0, "expected `from` peers of the admin port (0: no rule)")
	flag.BoolVar(&o.gatewayAPI, "gateway-api", true, "expect the Gateway API's RBAC rules and install notes")
	flag.StringVar(&o.clusterDomain, "cluster-domain", "cluster.local", "the clusterDomain value")
	flag.StringVar(&o.relay.kind, "relay", "off", "expected relay tier: off, Deployment or DaemonSet")
	flag.IntVar(&o.relay.replicas, "relay-replicas", 2, "expected relay Deployment replicas")
	flag.StringVar(&o.relay.upstream, "relay-upstream", "", "expected server_uri of the relay's configuration")
	flag.StringVar(&o.relay.creds, "relay-creds", "insecure", "expected channel_creds type of the relay's upstream")
	flag.StringVar(&o.relay.caSecret, "relay-ca-secret", "", "expected Secret of the upstream's CA (empty: none)")
	flag.Var(&o.relay.args, "relay-arg", "an argument the relay container must have (repeatable)")
	flag.StringVar(&o.relay.configOut, "relay-config-out", "", "write the rendered relay.json here")
	flag.Parse()
	if o.manifests == "" || o.notes == "" || o.releaseNamespace == "" || o.replicas < 0 {
		fmt.Fprintln(os.Stderr, "check: --manifests, --notes, --release-namespace and --replicas are required")
		os.Exit(2)
	}
	o.namespaces = splitList(namespaces)
	o.authorities = splitList(authorities)
	o.bootstrapAuthorities = splitList(bootstrapAuthorities)

	c := &checker{}
	all, err := readDocuments(o.manifests)
	if err != nil {
		fmt.Fprintf(os.Stderr, "check: %s: %v\n", o.manifests, err)
		os.Exit(1)
	}
	c.checkObjects(all)
	// The controller's checks see the controller's objects only.
	relayDocs, docs := splitRelay(all)
	c.checkRelay(relayDocs, docs, o.relay)
	if o.webhook != "off" && o.webhook != "generated" && o.webhook != "certManager" {
		fmt.Fprintln(os.Stderr, "check: --webhook must be off, generated or certManager")
		os.Exit(2)
	}
	c.checkDeployment(docs, o)
	c.checkService(docs, o)
	c.checkWebhook(docs, o)
	c.checkTLS(docs, o)
	c.checkRBAC(docs, o)
	c.checkAuthorities(docs, o)
	c.checkNotes(o)
	for _, failure := range c.failures {
		fmt.Printf("FAIL: %s: %s\n", o.manifests, failure)
	}
	if len(c.failures) > 0 {
		os.Exit(1)
	}
	fmt.Printf("check: %s: %d objects ok\n", o.manifests, len(all))
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// document is one rendered object and its YAML source.
type document struct {
	obj    object
	source []byte
}

// readDocuments decodes every document strictly: invalid YAML, duplicate
// keys, and documents that are not mappings are errors.
func readDocuments(path string) ([]document, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	decoder := yaml.NewDecoder(bytes.NewReader(data))
	var docs []document
	for i := 0; ; i++ {
		var node yaml.Node
		if err := decoder.Decode(&node); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("document %d: %v", i, err)
		}
		if len(node.Content) != 1 || node.Content[0].Kind != yaml.MappingNode {
			return nil, fmt.Errorf("document %d is not a mapping", i)
		}
		var obj object
		if err := node.Decode(&obj); err != nil {
			return nil, fmt.Errorf("document %d: %v", i, err)
		}
		var source bytes.Buffer
		encoder := yaml.NewEncoder(&source)
		encoder.SetIndent(2)
		if err := encoder.Encode(&node); err != nil {
			return nil, err
		}
		docs = append(docs, document{obj: obj, source: source.Bytes()})
	}
	return docs, nil
}

// get walks obj along path; a missing step gives nil.
func get(obj interface{}, path ...string) interface{} {
	for _, key := range path {
		m, ok := obj.(object)
		if !ok {
			return nil
		}
		obj = m[key]
	}
	return obj
}

func str(obj interface{}, path ...string) string {
	s, _ := get(obj, path...).(string)
	return s
}

func list(obj interface{}, path ...string) []interface{} {
	l, _ := get(obj, path...).([]interface{})
	return l
}

func toStrings(values []interface{}) []string {
	var out []string
	for _, v := range values {
		out = append(out, fmt.Sprint(v))
	}
	return out
}

func name(obj object) string {
	if ns := str(obj, "metadata", "namespace"); ns != "" {
		return fmt.Sprintf("%s %s/%s", obj["kind"], ns, str(obj, "metadata", "name"))
	}
	return fmt.Sprintf("%s %s", obj["kind"], str(obj, "metadata", "name"))
}

func ofKind(docs []document, kind string) []object {
	var out []object
	for _, d := range docs {
		if d.obj["kind"] == kind {
			out = append(out, d.obj)
		}
	}
	return out
}

func (c *checker) checkObjects(docs []document) {
	seen := map[string]bool{}
	for i, d := range docs {
		for _, field := range []string{"apiVersion", "kind"} {
			if str(d.obj, field) == "" {
				c.failf("document %d: %s is missing", i, field)
			}
		}
		if str(d.obj, "metadata", "name") == "" {
			c.failf("document %d (%v): metadata.name is missing", i, d.obj["kind"])
		}
		kind := str(d.obj, "kind")
		if namespacedKinds[kind] && str(d.obj, "metadata", "namespace") == "" {
			c.failf("%s: metadata.namespace is missing", name(d.obj))
		}
		if seen[name(d.obj)] {
			c.failf("%s: rendered twice", name(d.obj))
		}
		seen[name(d.obj)] = true
		if str(d.obj, "metadata", "labels", "app.kubernetes.io/managed-by") != "Helm" {
			c.failf("%s: label app.kubernetes.io/managed-by is not Helm", name(d.obj))
		}
	}
	if len(ofKind(docs, "CustomResourceDefinition")) != 0 {
		c.failf("CRDs are rendered from templates; they belong in crds/ only")
	}
}

func (c *checker) checkDeployment(docs []document, o options) {
	deployments := ofKind(docs, "Deployment")
	if len(deployments) != 1 {
		c.failf("want 1 Deployment, got %d", len(deployments))
		return
	}
	d := deployments[0]
	if str(d, "metadata", "namespace") != o.releaseNamespace {
		c.failf("%s: not in the release namespace %s", name(d), o.releaseNamespace)
	}
	if r, _ := get(d, "spec", "replicas").(int); r != o.replicas {
		c.failf("%s: spec.replicas is %v, want %d", name(d), get(d, "spec", "replicas"), o.replicas)
	}
	selector, _ := get(d, "spec", "selector", "matchLabels").(object)
	labels, _ := get(d, "spec", "template", "metadata", "labels").(object)
	if len(selector) == 0 {
		c.failf("%s: empty selector", name(d))
	}
	for k, v := range selector {
		if labels[k] != v {
			c.failf("%s: pod labels do not match selector %s=%v", name(d), k, v)
		}
	}
	pod, _ := get(d, "spec", "template", "spec").(object)
	if accounts := ofKind(docs, "ServiceAccount"); len(accounts) == 1 &&
		str(pod, "serviceAccountName") != str(accounts[0], "metadata", "name") {
		c.failf("%s: serviceAccountName %q is not the rendered ServiceAccount", name(d), str(pod, "serviceAccountName"))
	}
	container, ok := c.checkPod(name(d), pod)
	if !ok {
		return
	}
	c.checkPorts(name(d), container, o)
	c.checkArgs(name(d), container, o)
	c.checkEnv(name(d), container)
	if get(container, "command") != nil {
		c.failf("%s: command overrides the image's entrypoint (facet controller)", name(d))
	}
}

// checkPod checks that a workload's pod uses no host namespaces and runs one
// container, locked down (checkSecurity), and returns that container.
func (c *checker) checkPod(what string, pod object) (object, bool) {
	if pod["hostNetwork"] == true || pod["hostPID"] == true || pod["hostIPC"] == true {
		c.failf("%s: uses host namespaces", what)
	}
	containers := list(pod, "containers")
	if len(containers) != 1 {
		c.failf("%s: want 1 container, got %d", what, len(containers))
		return nil, false
	}
	container, _ := containers[0].(object)
	c.checkSecurity(what, pod, container)
	return container, true
}

func (c *checker) checkSecurity(what string, pod, container object) {
	podSC, _ := pod["securityContext"].(object)
	sc, _ := container["securityContext"].(object)
	// Container settings win; the pod's apply where the container says nothing.
	effective := func(key string) interface{} {
		if v, ok := sc[key]; ok {
			return v
		}
		return podSC[key]
	}
	if effective("runAsNonRoot") != true {
		c.failf("%s: runAsNonRoot is not true", what)
	}
	if effective("runAsUser") != 65532 {
		c.failf("%s: runAsUser is %v, want 65532", what, effective("runAsUser"))
	}
	if str(effective("seccompProfile"), "type") != "RuntimeDefault" {
		c.failf("%s: seccompProfile.type is not RuntimeDefault", what)
	}
	if sc["readOnlyRootFilesystem"] != true {
		c.failf("%s: readOnlyRootFilesystem is not true", what)
	}
	if sc["allowPrivilegeEscalation"] != false {
		c.failf("%s: allowPrivilegeEscalation is not false", what)
	}
	if sc["privileged"] == true {
		c.failf("%s: privileged", what)
	}
	drop := toStrings(list(sc, "capabilities", "drop"))
	if !reflect.DeepEqual(drop, []string{"ALL"}) {
		c.failf("%s: capabilities.drop is %v, want [ALL]", what, drop)
	}
	if add := list(sc, "capabilities", "add"); len(add) != 0 {
		c.failf("%s: capabilities.add is %v, want none", what, add)
	}
}

func (c *checker) checkPorts(what string, container object, o options) {
	ports := map[string]int{}
	for _, p := range list(container, "ports") {
		n, _ := get(p, "containerPort").(int)
		ports[str(p, "name")] = n
	}
	want := map[string]int{"grpc-xds": 18000, "http-admin": 18080}
	if o.webhook != "off" {
		want["https-webhook"] = o.webhookPort
	}
	if !reflect.DeepEqual(ports, want) {
		c.failf("%s: container ports are %v, want %v", what, ports, want)
	}
	probes := map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz"}
	for probe, path := range probes {
		if got := str(container, probe, "httpGet", "path"); got != path {
			c.failf("%s: %s path is %q, want %q", what, probe, got, path)
		}
		port := get(container, probe, "httpGet", "port")
		if s, ok := port.(string); ok {
			port = ports[s]
		}
		if port != 18080 {
			c.failf("%s: %s port is %v, want the admin port 18080", what, probe, get(container, probe, "httpGet", "port"))
		}
	}
}

func (c *checker) checkArgs(what string, container object, o options) {
	args := toStrings(list(container, "args"))
	seen := map[string]bool{}
	for _, arg := range args {
		flagName := strings.SplitN(arg, "=", 2)[0]
		if !controllerFlags[flagName] || !strings.Contains(arg, "=") {
			c.failf("%s: argument %q is not --flag=value for a `facet controller` flag", what, arg)
		}
		if seen[flagName] {
			c.failf("%s: %s is given twice", what, flagName)
		}
		seen[flagName] = true
	}
	has := map[string]bool{}
	for _, arg := range args {
		has[arg] = true
	}
	for _, want := range o.args {
		if !has[want] {
			c.failf("%s: args %v lack %q", what, args, want)
		}
	}
	for _, absent := range o.absentFlags {
		if seen[absent] {
			c.failf("%s: args %v have %s", what, args, absent)
		}
	}
}

func (c *checker) checkEnv(what string, container object) {
	for _, e := range list(container, "env") {
		if str(e, "name") == "POD_NAMESPACE" {
			if str(e, "valueFrom", "fieldRef", "fieldPath") != "metadata.namespace" {
				c.failf("%s: POD_NAMESPACE is not from the downward API's metadata.namespace", what)
			}
			return
		}
	}
	c.failf("%s: no POD_NAMESPACE env", what)
}

func (c *checker) checkService(docs []document, o options) {
	services := ofKind(docs, "Service")
	if len(services) != 1 {
		c.failf("want 1 Service, got %d", len(services))
		return
	}
	s := services[0]
	if deployments := ofKind(docs, "Deployment"); len(deployments) == 1 &&
		!reflect.DeepEqual(get(s, "spec", "selector"), get(deployments[0], "spec", "selector", "matchLabels")) {
		c.failf("%s: selector is not the Deployment's", name(s))
	}
	found := map[string]bool{}
	for _, p := range list(s, "spec", "ports") {
		switch str(p, "name") {
		case "grpc-xds":
			found["grpc-xds"] = true
			if get(p, "port") != 18000 || str(p, "targetPort") != "grpc-xds" || str(p, "appProtocol") != "grpc" {
				c.failf("%s: port grpc-xds is %v, want port 18000, targetPort grpc-xds, appProtocol grpc", name(s), p)
			}
		case "http-admin":
			found["http-admin"] = true
			if get(p, "port") != 18080 || str(p, "targetPort") != "http-admin" {
				c.failf("%s: port http-admin is %v, want port 18080, targetPort http-admin", name(s), p)
			}
		case "https-webhook":
			found["https-webhook"] = true
			if o.webhook == "off" {
				c.failf("%s: port https-webhook with the webhook off", name(s))
			}
			if get(p, "port") != 443 || str(p, "targetPort") != "https-webhook" {
				c.failf("%s: port https-webhook is %v, want port 443, targetPort https-webhook", name(s), p)
			}
		default:
			c.failf("%s: unexpected port %v", name(s), p)
		}
	}
	if !found["grpc-xds"] || found["http-admin"] != o.tls.adminService {
		c.failf("%s: ports are %v, want grpc-xds and, only with admin.service, http-admin", name(s), list(s, "spec", "ports"))
	}
	if o.webhook != "off" && !found["https-webhook"] {
		c.failf("%s: no port https-webhook for the webhook", name(s))
	}
}

// grant is one (API group, resource, verb) permission.
type grant struct{ group, resource, verb string }

var crdReadGrants = []grant{
	{"facet.dev", "xdsresources", "get"}, {"facet.dev", "xdsresources", "list"},
	{"facet.dev", "xdsresources", "watch"},
	{"facet.dev", "xdsresources/status", "update"}, {"facet.dev", "xdsresources/status", "patch"},
	{"apps", "controllerrevisions", "get"}, {"apps", "controllerrevisions", "list"},
	{"apps", "controllerrevisions", "watch"}, {"apps", "controllerrevisions", "create"},
	{"apps", "controllerrevisions", "delete"},
	{"discovery.k8s.io", "endpointslices", "list"}, {"discovery.k8s.io", "endpointslices", "watch"},
}

// What --gateway-api reads and writes, where XdsResources are watched.
var gatewayGrants = []grant{
	{"", "services", "list"}, {"", "services", "watch"},
	{"gateway.networking.k8s.io", "grpcroutes", "get"},
	{"gateway.networking.k8s.io", "grpcroutes", "list"},
	{"gateway.networking.k8s.io", "grpcroutes", "watch"},
	{"gateway.networking.k8s.io", "grpcroutes/status", "update"},
	{"gateway.networking.k8s.io", "grpcroutes/status", "patch"},
	{"gateway.networking.k8s.io", "referencegrants", "list"},
	{"gateway.networking.k8s.io", "referencegrants", "watch"},
	{"facet.dev", "xdsvariantpolicies", "get"}, {"facet.dev", "xdsvariantpolicies", "list"},
	{"facet.dev", "xdsvariantpolicies", "watch"},
	{"facet.dev", "xdsvariantpolicies/status", "update"},
	{"facet.dev", "xdsvariantpolicies/status", "patch"},
}

var authorityGrants = []grant{
	{"facet.dev", "xdsauthorities", "get"}, {"facet.dev", "xdsauthorities", "list"},
	{"facet.dev", "xdsauthorities", "watch"},
	{"facet.dev", "xdsauthorities/status", "update"}, {"facet.dev", "xdsauthorities/status", "patch"},
}

var leaseGrants = []grant{
	{"coordination.k8s.io", "leases", "get"}, {"coordination.k8s.io", "leases", "create"},
	{"coordination.k8s.io", "leases", "update"},
}

// grants expands a role's rules and fails any rule that grants more than the
// least-privilege set allows (wildcards, non-resource URLs, other resources).
func (c *checker) grants(role object) map[grant]bool {
	allowed := map[grant]bool{}
	for _, g := range append(append(append(append([]grant{}, crdReadGrants...), authorityGrants...), leaseGrants...), gatewayGrants...) {
		allowed[g] = true
	}
	out := map[grant]bool{}
	for i, rule := range list(role, "rules") {
		if get(rule, "nonResourceURLs") != nil {
			c.failf("%s: rules[%d] grants nonResourceURLs", name(role), i)
		}
		groups, resources, verbs := toStrings(list(rule, "apiGroups")), toStrings(list(rule, "resources")), toStrings(list(rule, "verbs"))
		if len(groups) == 0 || len(resources) == 0 || len(verbs) == 0 {
			c.failf("%s: rules[%d] is incomplete: %v", name(role), i, rule)
		}
		for _, group := range groups {
			for _, resource := range resources {
				for _, verb := range verbs {
					g := grant{group, resource, verb}
					switch {
					case group == "*" || resource == "*" || verb == "*":
						c.failf("%s: rules[%d] uses a wildcard: %v", name(role), i, rule)
					case resource == "secrets":
						c.failf("%s: rules[%d] grants access to secrets", name(role), i)
					case group == "facet.dev" && (verb == "create" || verb == "delete" || verb == "deletecollection"):
						c.failf("%s: rules[%d] grants %s on %s", name(role), i, verb, resource)
					case !allowed[g]:
						c.failf("%s: rules[%d] grants %s %s/%s, beyond least privilege", name(role), i, verb, group, resource)
					}
					out[g] = true
				}
			}
		}
	}
	return out
}

func (c *checker) checkRBAC(docs []document, o options) {
	account := ""
	if accounts := ofKind(docs, "ServiceAccount"); len(accounts) == 1 {
		account = o.releaseNamespace + "/" + str(accounts[0], "metadata", "name")
	} else if deployments := ofKind(docs, "Deployment"); len(deployments) == 1 {
		account = o.releaseNamespace + "/" + str(deployments[0], "spec", "template", "spec", "serviceAccountName")
	}
	// Which roles are bound to the controller's service account.
	bound := map[string]bool{}
	for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
		for _, b := range ofKind(docs, kind) {
			subjects := list(b, "subjects")
			if len(subjects) != 1 || str(subjects[0], "kind") != "ServiceAccount" ||
				str(subjects[0], "namespace")+"/"+str(subjects[0], "name") != account {
				c.failf("%s: subjects are %v, want only the ServiceAccount %s", name(b), subjects, account)
			}
			roleKind := str(b, "roleRef", "kind")
			if kind == "ClusterRoleBinding" && roleKind != "ClusterRole" {
				c.failf("%s: binds a %s", name(b), roleKind)
			}
			key := roleKind + " " + str(b, "roleRef", "name")
			if roleKind == "Role" {
				key = "Role " + str(b, "metadata", "namespace") + "/" + str(b, "roleRef", "name")
			}
			bound[key] = true
		}
	}

	clusterGrants := map[grant]bool{}
	for _, role := range ofKind(docs, "ClusterRole") {
		if !bound[name(role)] {
			c.failf("%s: not bound to the controller", name(role))
		}
		for g := range c.grants(role) {
			clusterGrants[g] = true
			if g.resource == "leases" {
				c.failf("%s: grants leases cluster-wide", name(role))
			}
		}
	}
	namespaceGrants := map[string]map[grant]bool{}
	for _, role := range ofKind(docs, "Role") {
		if !bound[name(role)] {
			c.failf("%s: not bound to the controller", name(role))
		}
		ns := str(role, "metadata", "namespace")
		if namespaceGrants[ns] == nil {
			namespaceGrants[ns] = map[grant]bool{}
		}
		for g := range c.grants(role) {
			namespaceGrants[ns][g] = true
			if g.resource == "leases" && ns != o.releaseNamespace {
				c.failf("%s: grants leases outside the release namespace", name(role))
			}
			if strings.HasPrefix(g.resource, "xdsauthorities") {
				c.failf("%s: xdsauthorities are cluster-scoped; a Role cannot grant them", name(role))
			}
		}
		for _, rule := range list(role, "rules") {
			if !contains(toStrings(list(rule, "resources")), "leases") {
				continue
			}
			verbs, names := toStrings(list(rule, "verbs")), toStrings(list(rule, "resourceNames"))
			if !reflect.DeepEqual(verbs, []string{"create"}) && !reflect.DeepEqual(names, []string{o.lease}) {
				c.failf("%s: lease rule %v is not limited to resourceNames [%s]", name(role), rule, o.lease)
			}
		}
	}

	for _, g := range authorityGrants {
		if !clusterGrants[g] {
			c.failf("no ClusterRole grants %s %s/%s", g.verb, g.group, g.resource)
		}
	}
	// The rights of the watched objects: the Gateway API's too when it is on,
	// and never when it is off.
	watchedGrants := crdReadGrants
	if o.gatewayAPI {
		watchedGrants = append(append([]grant{}, crdReadGrants...), gatewayGrants...)
	} else {
		for _, g := range gatewayGrants {
			if clusterGrants[g] {
				c.failf("gatewayAPI is off but a ClusterRole grants %s %s/%s", g.verb, g.group, g.resource)
			}
			for ns, grants := range namespaceGrants {
				if grants[g] {
					c.failf("gatewayAPI is off but a Role in %s grants %s %s/%s", ns, g.verb, g.group, g.resource)
				}
			}
		}
	}
	if len(o.namespaces) == 0 {
		for _, g := range watchedGrants {
			if !clusterGrants[g] {
				c.failf("no ClusterRole grants %s %s/%s (all namespaces are watched)", g.verb, g.group, g.resource)
			}
		}
	} else {
		for g := range clusterGrants {
			if strings.HasPrefix(g.resource, "xdsresources") || containsGrant(gatewayGrants, g) {
				c.failf("a ClusterRole grants %s %s/%s though only %v are watched", g.verb, g.group, g.resource, o.namespaces)
			}
		}
		for _, ns := range o.namespaces {
			for _, g := range watchedGrants {
				if !namespaceGrants[ns][g] {
					c.failf("no Role in %s grants %s %s/%s", ns, g.verb, g.group, g.resource)
				}
			}
		}
	}
	for ns, grants := range namespaceGrants {
		if ns != o.releaseNamespace && !contains(o.namespaces, ns) {
			c.failf("Roles grant %v in namespace %s, which is neither watched nor the release namespace", grants, ns)
		}
	}
	for _, g := range leaseGrants {
		has := namespaceGrants[o.releaseNamespace][g]
		if o.lease != "" && !has {
			c.failf("no Role in %s grants %s %s/%s for leader election", o.releaseNamespace, g.verb, g.group, g.resource)
		}
		if o.lease == "" && has {
			c.failf("leader election is off but a Role grants %s %s/%s", g.verb, g.group, g.resource)
		}
	}
}

// sameSet reports whether a and b hold the same strings, in any order.
func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	sortedA, sortedB := append([]string{}, a...), append([]string{}, b...)
	sort.Strings(sortedA)
	sort.Strings(sortedB)
	return reflect.DeepEqual(sortedA, sortedB)
}

func containsGrant(list []grant, g grant) bool {
	for _, v := range list {
		if v == g {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func (c *checker) checkAuthorities(docs []document, o options) {
	var names []string
	var out bytes.Buffer
	for _, d := range docs {
		if d.obj["kind"] != "XdsAuthority" {
			continue
		}
		if str(d.obj, "apiVersion") != "facet.dev/v1alpha1" {
			c.failf("%s: apiVersion is %q", name(d.obj), str(d.obj, "apiVersion"))
		}
		if str(d.obj, "metadata", "namespace") != "" {
			c.failf("%s: XdsAuthority is cluster-scoped but has a namespace", name(d.obj))
		}
		if _, ok := d.obj["spec"].(object); !ok {
			c.failf("%s: spec is not an object", name(d.obj))
		}
		names = append(names, str(d.obj, "metadata", "name"))
		out.WriteString("---\n")
		out.Write(d.source)
	}
	if !sameSet(names, o.authorities) {
		c.failf("XdsAuthority objects are %v, want %v", names, o.authorities)
	}
	if o.authoritiesOut != "" {
		if err := os.WriteFile(o.authoritiesOut, out.Bytes(), 0o644); err != nil {
			c.failf("%v", err)
		}
	}
}

// checkNotes parses the bootstrap JSON NOTES.txt prints (from a line "{" to
// a line "}") and checks it points at the Service.
func (c *checker) checkNotes(o options) {
	data, err := os.ReadFile(o.notes)
	if err != nil {
		c.failf("NOTES.txt: %v", err)
		return
	}
	notes := string(data)
	if !strings.Contains(notes, "rollout status deployment/") {
		c.failf("NOTES.txt: no rollout status command")
	}
	const gatewayRelease = "gateway-api/releases/download/v1.4.1/standard-install.yaml"
	if strings.Contains(notes, gatewayRelease) != o.gatewayAPI {
		c.failf("NOTES.txt: names the Gateway API release (%s): %v, want %v", gatewayRelease, !o.gatewayAPI, o.gatewayAPI)
	}
	start := strings.Index(notes, "\n{\n")
	end := strings.Index(notes, "\n}\n")
	if start < 0 || end < start {
		c.failf("NOTES.txt: no bootstrap JSON block")
		return
	}
	var bootstrap object
	if err := json.Unmarshal([]byte(notes[start+1:end+2]), &bootstrap); err != nil {
		c.failf("NOTES.txt: the bootstrap is not JSON: %v", err)
		return
	}
	servers := list(bootstrap, "xds_servers")
	if len(servers) != 1 {
		c.failf("NOTES.txt: bootstrap has %d xds_servers, want 1", len(servers))
		return
	}
	if o.serverURI != "" && str(servers[0], "server_uri") != o.serverURI {
		c.failf("NOTES.txt: server_uri is %q, want %q", str(servers[0], "server_uri"), o.serverURI)
	}
	creds := list(servers[0], "channel_creds")
	switch {
	case o.tls.xds == "none" || o.relay.kind != "off": // The relay serves plaintext.
		if len(creds) != 1 || str(creds[0], "type") != "insecure" {
			c.failf("NOTES.txt: channel_creds are %v, want insecure", creds)
		}
	case len(creds) != 1 || str(creds[0], "type") != "tls" || str(creds[0], "config", "ca_certificate_file") == "" ||
		(str(creds[0], "config", "certificate_file") != "") != (o.tls.xdsClientCA != ""):
		c.failf("NOTES.txt: channel_creds are %v, want tls with a CA file (and an identity only with a client CA)", creds)
	}
	if str(bootstrap, "node", "id") == "" {
		c.failf("NOTES.txt: bootstrap has no node.id")
	}
	if _, ok := get(bootstrap, "node", "locality").(object); !ok {
		c.failf("NOTES.txt: bootstrap has no node.locality (grpc-js requires it)")
	}
	if metadata, _ := get(bootstrap, "node", "metadata").(object); len(metadata) == 0 {
		c.failf("NOTES.txt: bootstrap has no node.metadata")
	}
	var authorities []string
	if m, ok := bootstrap["authorities"].(object); ok {
		for k := range m {
			authorities = append(authorities, k)
		}
	}
	if !sameSet(authorities, o.bootstrapAuthorities) {
		c.failf("NOTES.txt: bootstrap authorities are %v, want %v", authorities, o.bootstrapAuthorities)
	}
}
