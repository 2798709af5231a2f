package main

import (
	"fmt"
	"strings"
)

// tlsOptions says what the values ask of the xDS and admin ports' TLS, the
// Service's admin port and the NetworkPolicy.
type tlsOptions struct {
	// "none", "secret" or "certManager"; the Secret the port's certificate
	// is mounted from; the expected cert-manager issuerRef (kind/name).
	xds, xdsSecret, xdsIssuer       string
	admin, adminSecret, adminIssuer string
	// The client CA of the xDS port as "secret/key" (empty: no mTLS).
	xdsClientCA string
	// Whether the Service exposes the admin port.
	adminService bool
	// Whether a NetworkPolicy is rendered; the expected number of `from`
	// peers of its xDS rule (0: every source) and of its admin rule (0: no
	// admin rule).
	networkPolicy        bool
	xdsPeers, adminPeers int
}

// secretMountedAt returns the Secret mounted at `path` in the Deployment's
// container (and whether the mount is read-only), or "" when nothing is.
func secretMountedAt(pod, container object, path string) (secret string, readOnly bool) {
	for _, m := range list(container, "volumeMounts") {
		if str(m, "mountPath") != path {
			continue
		}
		for _, v := range list(pod, "volumes") {
			if str(v, "name") == str(m, "name") {
				return str(v, "secret", "secretName"), get(m, "readOnly") == true
			}
		}
	}
	return "", false
}

// deploymentParts returns the single Deployment's pod spec and container.
func deploymentParts(docs []document) (object, object, object) {
	deployments := ofKind(docs, "Deployment")
	if len(deployments) != 1 {
		return nil, nil, nil
	}
	pod, _ := get(deployments[0], "spec", "template", "spec").(object)
	containers := list(pod, "containers")
	if len(containers) != 1 {
		return nil, nil, nil
	}
	container, _ := containers[0].(object)
	return deployments[0], pod, container
}

// checkTLS checks the serving certificates of the xDS and admin ports: the
// flags, the read-only Secret mounts, the cert-manager Certificates, HTTPS
// probes, the Service's admin port and the NetworkPolicy.
func (c *checker) checkTLS(docs []document, o options) {
	d, pod, container := deploymentParts(docs)
	if d == nil {
		return
	}
	args := toStrings(list(container, "args"))
	for _, port := range []struct{ name, mode, secret, issuer string }{
		{"xds", o.tls.xds, o.tls.xdsSecret, o.tls.xdsIssuer},
		{"admin", o.tls.admin, o.tls.adminSecret, o.tls.adminIssuer},
	} {
		mount := "/etc/facet/" + port.name
		flags := []string{
			fmt.Sprintf("--%s-tls-cert=%s/tls.crt", port.name, mount),
			fmt.Sprintf("--%s-tls-key=%s/tls.key", port.name, mount),
		}
		secret, readOnly := secretMountedAt(pod, container, mount)
		cert := certificateFor(docs, port.name)
		if port.mode == "none" {
			for _, flag := range flags {
				if contains(args, flag) {
					c.failf("%s: %s with %s.tls.certificates=none", name(d), flag, port.name)
				}
			}
			if secret != "" || cert != nil {
				c.failf("%s: a %s certificate is mounted or issued with %s.tls.certificates=none", name(d), port.name, port.name)
			}
			continue
		}
		for _, flag := range flags {
			if !contains(args, flag) {
				c.failf("%s: args %v lack %q", name(d), args, flag)
			}
		}
		if secret != port.secret || !readOnly {
			c.failf("%s: %s mounts Secret %q (readOnly %v), want %q read-only", name(d), mount, secret, readOnly, port.secret)
		}
		if port.mode == "secret" {
			if cert != nil {
				c.failf("%s: rendered with %s.tls.certificates=secret (the Secret exists)", name(cert), port.name)
			}
			continue
		}
		if cert == nil {
			c.failf("no Certificate for the %s port with %s.tls.certificates=certManager", port.name, port.name)
			continue
		}
		if str(cert, "spec", "secretName") != port.secret {
			c.failf("%s: secretName is %q, want the mounted %q", name(cert), str(cert, "spec", "secretName"), port.secret)
		}
		services := ofKind(docs, "Service")
		if len(services) == 1 {
			dnsNames := toStrings(list(cert, "spec", "dnsNames"))
			for _, want := range serviceDNSNames(str(services[0], "metadata", "name"), o.releaseNamespace, o.clusterDomain) {
				if !contains(dnsNames, want) {
					c.failf("%s: dnsNames %v lack the Service name %q", name(cert), dnsNames, want)
				}
			}
		}
		if ref := str(cert, "spec", "issuerRef", "kind") + "/" + str(cert, "spec", "issuerRef", "name"); ref != port.issuer {
			c.failf("%s: issuerRef is %s, want %s", name(cert), ref, port.issuer)
		}
		if !contains(toStrings(list(cert, "spec", "usages")), "server auth") {
			c.failf("%s: usages lack server auth", name(cert))
		}
	}
	c.checkClientCA(d, pod, container, args, o)
	for _, probe := range []string{"livenessProbe", "readinessProbe"} {
		scheme := str(container, probe, "httpGet", "scheme")
		if want := map[bool]string{true: "", false: "HTTPS"}[o.tls.admin == "none"]; scheme != want {
			c.failf("%s: %s scheme is %q, want %q", name(d), probe, scheme, want)
		}
	}
	c.checkNetworkPolicy(docs, o)
}

// certificateFor returns the cert-manager Certificate of a port ("xds" or
// "admin"), named <fullname>-<port>, or nil.
func certificateFor(docs []document, port string) object {
	for _, cert := range ofKind(docs, "Certificate") {
		if strings.HasSuffix(str(cert, "metadata", "name"), "-"+port) {
			return cert
		}
	}
	return nil
}

func (c *checker) checkClientCA(d, pod, container object, args []string, o options) {
	const mount = "/etc/facet/xds-client-ca"
	secret, readOnly := secretMountedAt(pod, container, mount)
	var flagged []string
	for _, arg := range args {
		if strings.HasPrefix(arg, "--xds-tls-client-ca=") {
			flagged = append(flagged, arg)
		}
	}
	if o.tls.xdsClientCA == "" {
		if secret != "" || len(flagged) != 0 {
			c.failf("%s: a client CA (%v, Secret %q) without xds.tls.clientCa", name(d), flagged, secret)
		}
		return
	}
	parts := strings.SplitN(o.tls.xdsClientCA, "/", 2)
	if want := "--xds-tls-client-ca=" + mount + "/" + parts[1]; len(flagged) != 1 || flagged[0] != want {
		c.failf("%s: client CA flags are %v, want %q", name(d), flagged, want)
	}
	if secret != parts[0] || !readOnly {
		c.failf("%s: %s mounts Secret %q (readOnly %v), want %q read-only", name(d), mount, secret, readOnly, parts[0])
	}
}

func (c *checker) checkNetworkPolicy(docs []document, o options) {
	policies := ofKind(docs, "NetworkPolicy")
	if !o.tls.networkPolicy {
		if len(policies) != 0 {
			c.failf("%d NetworkPolicies rendered with networkPolicy.enabled=false", len(policies))
		}
		return
	}
	if len(policies) != 1 {
		c.failf("want 1 NetworkPolicy, got %d", len(policies))
		return
	}
	policy := policies[0]
	if deployments := ofKind(docs, "Deployment"); len(deployments) == 1 &&
		fmt.Sprint(get(policy, "spec", "podSelector", "matchLabels")) != fmt.Sprint(get(deployments[0], "spec", "selector", "matchLabels")) {
		c.failf("%s: podSelector is not the Deployment's selector", name(policy))
	}
	if types := toStrings(list(policy, "spec", "policyTypes")); len(types) != 1 || types[0] != "Ingress" {
		c.failf("%s: policyTypes are %v, want [Ingress]", name(policy), types)
	}
	peers := map[int]int{} // port -> number of `from` peers (0: every source)
	for _, rule := range list(policy, "spec", "ingress") {
		ports := list(rule, "ports")
		if len(ports) != 1 {
			c.failf("%s: a rule with ports %v, want one port per rule", name(policy), ports)
			continue
		}
		port, _ := get(ports[0], "port").(int)
		peers[port] = len(list(rule, "from"))
	}
	want := map[int]int{18000: o.tls.xdsPeers}
	if o.tls.adminPeers > 0 {
		want[18080] = o.tls.adminPeers
	}
	if o.webhook != "off" {
		want[o.webhookPort] = 0
	}
	if fmt.Sprint(peers) != fmt.Sprint(want) {
		c.failf("%s: ingress port -> peers is %v, want %v (0: every source; the admin port only from its peers)", name(policy), peers, want)
	}
}
