package main

import (
	"encoding/json"
	"os"
	"reflect"
)

// relayOptions: what the relay tier (relay.*) must render.
type relayOptions struct {
	// "off", "Deployment" or "DaemonSet".
	kind string
	// spec.replicas of a Deployment.
	replicas int
	// The configuration's server_uri and channel_creds type (insecure or tls);
	// the Secret holding the upstream's CA ("" for none).
	upstream, creds, caSecret string
	// Arguments the relay container must have.
	args stringList
	// Where to write the rendered relay.json ("": nowhere).
	configOut string
}

// isRelay reports whether a rendered object belongs to the relay tier.
func isRelay(obj object) bool {
	return str(obj, "metadata", "labels", "app.kubernetes.io/component") == "relay"
}

// splitRelay separates the relay tier's objects from the controller's.
func splitRelay(docs []document) (relay, rest []document) {
	for _, d := range docs {
		if isRelay(d.obj) {
			relay = append(relay, d)
		} else {
			rest = append(rest, d)
		}
	}
	return relay, rest
}

// selects reports whether a selector's labels are all among labels.
func selects(selector, labels object) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// checkRelay checks the relay tier: its workload of the kind asked for,
// locked down like the controller and running `facet relay` on the rendered
// configuration; the ConfigMap naming the upstream; a Service selecting the
// relay pods only; and that the controller's Service selects none of them.
func (c *checker) checkRelay(relayDocs, controllerDocs []document, o relayOptions) {
	if o.kind == "off" {
		for _, d := range relayDocs {
			c.failf("%s: rendered with the relay off", name(d.obj))
		}
		return
	}
	for _, other := range []string{"Deployment", "DaemonSet"} {
		if other != o.kind && len(ofKind(relayDocs, other)) != 0 {
			c.failf("relay: a %s with relay.kind %s", other, o.kind)
		}
	}
	workloads := ofKind(relayDocs, o.kind)
	configMaps := ofKind(relayDocs, "ConfigMap")
	services := ofKind(relayDocs, "Service")
	if len(workloads) != 1 || len(configMaps) != 1 || len(services) != 1 {
		c.failf("relay: want 1 %s, 1 ConfigMap and 1 Service, got %d, %d and %d", o.kind,
			len(workloads), len(configMaps), len(services))
		return
	}
	w, cm, s := workloads[0], configMaps[0], services[0]
	if o.kind == "Deployment" {
		if r, _ := get(w, "spec", "replicas").(int); r != o.replicas {
			c.failf("%s: spec.replicas is %v, want %d", name(w), get(w, "spec", "replicas"), o.replicas)
		}
	} else if get(w, "spec", "replicas") != nil {
		c.failf("%s: a DaemonSet has no replicas", name(w))
	}
	selector, _ := get(w, "spec", "selector", "matchLabels").(object)
	labels, _ := get(w, "spec", "template", "metadata", "labels").(object)
	if !selects(selector, labels) {
		c.failf("%s: pod labels do not match its selector %v", name(w), selector)
	}
	if !reflect.DeepEqual(get(s, "spec", "selector"), selector) {
		c.failf("%s: selector is not the relay's", name(s))
	}
	for _, controller := range ofKind(controllerDocs, "Service") {
		if sel, _ := get(controller, "spec", "selector").(object); selects(sel, labels) {
			c.failf("%s selects the relay pods", name(controller))
		}
	}
	for _, controller := range ofKind(controllerDocs, "Deployment") {
		if sel, _ := get(controller, "spec", "selector", "matchLabels").(object); selects(sel, labels) {
			c.failf("%s selects the relay pods", name(controller))
		}
	}
	ports := list(s, "spec", "ports")
	if len(ports) != 1 || str(ports[0], "name") != "grpc-xds" || str(ports[0], "targetPort") != "grpc-xds" ||
		str(ports[0], "appProtocol") != "grpc" {
		c.failf("%s: ports are %v, want grpc-xds only", name(s), ports)
	}
	if str(w, "spec", "template", "metadata", "annotations", "checksum/config") == "" {
		c.failf("%s: no checksum/config annotation (a new configuration would not roll the pods)", name(w))
	}

	pod, _ := get(w, "spec", "template", "spec").(object)
	if pod["automountServiceAccountToken"] != false {
		c.failf("%s: mounts a service account token it never uses", name(w))
	}
	container, ok := c.checkPod(name(w), pod)
	if !ok {
		return
	}
	if got := toStrings(list(container, "command")); !reflect.DeepEqual(got, []string{"/usr/local/bin/facet", "relay"}) {
		c.failf("%s: command is %v, want facet relay", name(w), got)
	}
	args := toStrings(list(container, "args"))
	for _, want := range append([]string{"--config=/etc/facet/relay/relay.json"}, o.args...) {
		if !contains(args, want) {
			c.failf("%s: args %v lack %s", name(w), args, want)
		}
	}
	for probe, path := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
		if str(container, probe, "httpGet", "path") != path || str(container, probe, "httpGet", "port") != "http-admin" {
			c.failf("%s: %s is not GET %s on http-admin", name(w), probe, path)
		}
	}
	volumes := map[string]object{}
	for _, v := range list(pod, "volumes") {
		if vo, ok := v.(object); ok {
			volumes[str(vo, "name")] = vo
		}
	}
	if str(volumes["config"], "configMap", "name") != str(cm, "metadata", "name") {
		c.failf("%s: volume config is not the ConfigMap %s", name(w), str(cm, "metadata", "name"))
	}
	if got := str(volumes["upstream-ca"], "secret", "secretName"); got != o.caSecret {
		c.failf("%s: the upstream CA volume's Secret is %q, want %q", name(w), got, o.caSecret)
	}

	var config struct {
		XdsServers []struct {
			ServerURI    string `json:"server_uri"`
			ChannelCreds []struct {
				Type   string            `json:"type"`
				Config map[string]string `json:"config"`
			} `json:"channel_creds"`
		} `json:"xds_servers"`
	}
	if o.configOut != "" {
		if err := os.WriteFile(o.configOut, []byte(str(cm, "data", "relay.json")), 0o644); err != nil {
			c.failf("%s: %v", name(cm), err)
		}
	}
	if err := json.Unmarshal([]byte(str(cm, "data", "relay.json")), &config); err != nil {
		c.failf("%s: relay.json: %v", name(cm), err)
		return
	}
	if len(config.XdsServers) != 1 || len(config.XdsServers[0].ChannelCreds) != 1 {
		c.failf("%s: relay.json: want one server with one channel_creds, got %+v", name(cm), config.XdsServers)
		return
	}
	server := config.XdsServers[0]
	if server.ServerURI != o.upstream {
		c.failf("%s: relay.json server_uri is %q, want %q", name(cm), server.ServerURI, o.upstream)
	}
	creds := server.ChannelCreds[0]
	if creds.Type != o.creds {
		c.failf("%s: relay.json channel_creds type is %q, want %q", name(cm), creds.Type, o.creds)
	}
	if ca := creds.Config["ca_certificate_file"]; (ca != "") != (o.caSecret != "") {
		c.failf("%s: relay.json ca_certificate_file is %q with the upstream CA Secret %q", name(cm), ca, o.caSecret)
	}
}
