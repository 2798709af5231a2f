package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"
)

// The mount of the webhook's certificate and the flags that read it.
const webhookMount = "/etc/facet/webhook"

// webhookObjects returns the objects of `kind` that belong to the webhook
// (named <fullname>-webhook...), not to the xDS or admin ports' TLS.
func webhookObjects(docs []document, kind string) []object {
	var out []object
	for _, obj := range ofKind(docs, kind) {
		if strings.Contains(str(obj, "metadata", "name"), "-webhook") {
			out = append(out, obj)
		}
	}
	return out
}

// checkWebhook checks the validating admission webhook: the
// ValidatingWebhookConfiguration (rules, service, policy, selectors), the
// Deployment's webhook flags and Secret mount, and the certificates, generated
// (the caBundle verifies the Secret's certificate for the Service's names) or
// from cert-manager (Certificate, Issuer, CA injection).
func (c *checker) checkWebhook(docs []document, o options) {
	configs := ofKind(docs, "ValidatingWebhookConfiguration")
	certKinds := len(webhookObjects(docs, "Secret")) + len(webhookObjects(docs, "Certificate")) + len(webhookObjects(docs, "Issuer"))
	if o.webhook == "off" {
		if len(configs) != 0 || certKinds != 0 {
			c.failf("the webhook is off but %d ValidatingWebhookConfigurations and %d Secrets, Certificates or Issuers are rendered", len(configs), certKinds)
		}
		for _, d := range ofKind(docs, "Deployment") {
			for _, v := range list(d, "spec", "template", "spec", "volumes") {
				if strings.Contains(str(v, "name"), "webhook") {
					c.failf("%s: volume %v with the webhook off", name(d), v)
				}
			}
		}
		return
	}
	if len(configs) != 1 {
		c.failf("want 1 ValidatingWebhookConfiguration, got %d", len(configs))
		return
	}
	config := configs[0]
	services := ofKind(docs, "Service")
	service := ""
	if len(services) == 1 {
		service = str(services[0], "metadata", "name")
	}
	hooks := list(config, "webhooks")
	if len(hooks) != 1 {
		c.failf("%s: want 1 webhook, got %d", name(config), len(hooks))
		return
	}
	hook, _ := hooks[0].(object)
	what := fmt.Sprintf("%s: webhook %q", name(config), str(hook, "name"))
	if parts := strings.Split(str(hook, "name"), "."); len(parts) < 3 {
		c.failf("%s: the name must be fully qualified (at least three segments)", what)
	}
	if got := toStrings(list(hook, "admissionReviewVersions")); !reflect.DeepEqual(got, []string{"v1"}) {
		c.failf("%s: admissionReviewVersions are %v, want [v1]", what, got)
	}
	if str(hook, "sideEffects") != "None" {
		c.failf("%s: sideEffects is %q, want None", what, str(hook, "sideEffects"))
	}
	if str(hook, "failurePolicy") != o.failurePolicy {
		c.failf("%s: failurePolicy is %q, want %q", what, str(hook, "failurePolicy"), o.failurePolicy)
	}
	if get(hook, "timeoutSeconds") != o.webhookTimeout {
		c.failf("%s: timeoutSeconds is %v, want %d", what, get(hook, "timeoutSeconds"), o.webhookTimeout)
	}
	wantService := object{"namespace": o.releaseNamespace, "name": service, "path": "/validate", "port": 443}
	if got := get(hook, "clientConfig", "service"); !reflect.DeepEqual(got, wantService) {
		c.failf("%s: clientConfig.service is %v, want %v (the Service's https-webhook port)", what, got, wantService)
	}
	if get(hook, "clientConfig", "url") != nil {
		c.failf("%s: clientConfig has a url", what)
	}
	if notes, err := os.ReadFile(o.notes); err == nil &&
		!strings.Contains(string(notes), "kubectl get validatingwebhookconfiguration "+str(config, "metadata", "name")+"\n") {
		c.failf("NOTES.txt: no `kubectl get validatingwebhookconfiguration %s`", str(config, "metadata", "name"))
	}
	c.checkWebhookRules(what, hook)
	c.checkWebhookSelectors(what, hook, docs, o)

	secret := c.checkWebhookMount(docs, o)
	caBundle := str(hook, "clientConfig", "caBundle")
	inject := str(config, "metadata", "annotations", "cert-manager.io/inject-ca-from")
	dnsNames := serviceDNSNames(service, o.releaseNamespace, o.clusterDomain)
	switch o.webhook {
	case "generated":
		if inject != "" {
			c.failf("%s: cert-manager.io/inject-ca-from with generated certificates", name(config))
		}
		if len(webhookObjects(docs, "Certificate"))+len(webhookObjects(docs, "Issuer")) != 0 {
			c.failf("cert-manager objects are rendered with generated certificates")
		}
		c.checkGeneratedCertificate(docs, secret, caBundle, dnsNames, o)
	case "certManager":
		if caBundle != "" {
			c.failf("%s: a caBundle with cert-manager (its CA injector fills it)", what)
		}
		c.checkCertManager(docs, secret, inject, dnsNames, o)
	}
	if o.webhookOut != "" {
		var source []byte
		for _, d := range docs {
			if d.obj["kind"] == "ValidatingWebhookConfiguration" {
				source = d.source
			}
		}
		if err := os.WriteFile(filepath.Join(o.webhookOut, "webhook.yaml"), source, 0o644); err != nil {
			c.failf("%v", err)
		}
	}
}

func serviceDNSNames(service, namespace, clusterDomain string) []string {
	return []string{service, service + "." + namespace, service + "." + namespace + ".svc",
		service + "." + namespace + ".svc." + clusterDomain}
}

func (c *checker) checkWebhookRules(what string, hook object) {
	rules := list(hook, "rules")
	if len(rules) != 1 {
		c.failf("%s: want 1 rule, got %d", what, len(rules))
		return
	}
	want := map[string][]string{
		"operations": {"CREATE", "UPDATE"}, "apiGroups": {"facet.dev"},
		"apiVersions": {"v1alpha1"}, "resources": {"xdsresources", "xdsauthorities"},
	}
	for field, values := range want {
		if got := toStrings(list(rules[0], field)); !sameSet(got, values) {
			c.failf("%s: rules[0].%s is %v, want %v", what, field, got, values)
		}
	}
	if scope := str(rules[0], "scope"); scope != "" && scope != "*" {
		c.failf("%s: rules[0].scope is %q; XdsResources are namespaced and XdsAuthorities cluster-scoped", what, scope)
	}
}

// selectorMatches evaluates a metav1.LabelSelector (matchLabels,
// matchExpressions) against labels, as the API server does.
func selectorMatches(selector interface{}, labels object) (bool, error) {
	if selector == nil {
		return true, nil
	}
	matchLabels, _ := get(selector, "matchLabels").(object)
	for k, v := range matchLabels {
		if labels[k] != v {
			return false, nil
		}
	}
	for _, e := range list(selector, "matchExpressions") {
		value, has := labels[str(e, "key")]
		in := has && contains(toStrings(list(e, "values")), fmt.Sprint(value))
		switch str(e, "operator") {
		case "In":
			if !in {
				return false, nil
			}
		case "NotIn":
			if in {
				return false, nil
			}
		case "Exists":
			if !has {
				return false, nil
			}
		case "DoesNotExist":
			if has {
				return false, nil
			}
		default:
			return false, fmt.Errorf("unknown operator %q", str(e, "operator"))
		}
	}
	return true, nil
}

// checkWebhookSelectors checks which objects the API server sends: every
// object of users in the watched namespaces, none of the XdsAuthorities the
// release creates with the configuration (no replica can answer yet).
func (c *checker) checkWebhookSelectors(what string, hook object, docs []document, o options) {
	objects := get(hook, "objectSelector")
	if objects != nil {
		if _, ok := get(objects, "matchLabels").(object); !ok && get(objects, "matchLabels") != nil {
			c.failf("%s: objectSelector.matchLabels is not a map", what)
			return
		}
	}
	userObject := object{"app.kubernetes.io/name": "greeter"}
	if match, err := selectorMatches(objects, userObject); err != nil || !match {
		c.failf("%s: objectSelector %v does not select users' objects (%v)", what, objects, err)
	}
	for _, a := range ofKind(docs, "XdsAuthority") {
		labels, _ := get(a, "metadata", "labels").(object)
		if match, _ := selectorMatches(objects, labels); match {
			c.failf("%s: objectSelector selects %s, which Helm creates before a replica can answer", what, name(a))
		}
	}
	namespaces := get(hook, "namespaceSelector")
	nsLabels := func(ns string) object { return object{"kubernetes.io/metadata.name": ns} }
	watched := o.namespaces
	if len(watched) == 0 {
		if namespaces != nil {
			c.failf("%s: namespaceSelector %v though every namespace is watched", what, namespaces)
		}
		return
	}
	for _, ns := range watched {
		if match, err := selectorMatches(namespaces, nsLabels(ns)); err != nil || !match {
			c.failf("%s: namespaceSelector %v does not select the watched namespace %s (%v)", what, namespaces, ns, err)
		}
	}
	if match, _ := selectorMatches(namespaces, nsLabels("not-watched")); match {
		c.failf("%s: namespaceSelector %v selects namespaces Facet does not watch", what, namespaces)
	}
}

// checkWebhookMount checks the webhook flags and that they read a read-only
// mount of one Secret; returns the Secret's name.
func (c *checker) checkWebhookMount(docs []document, o options) string {
	deployments := ofKind(docs, "Deployment")
	if len(deployments) != 1 {
		return ""
	}
	d := deployments[0]
	pod, _ := get(d, "spec", "template", "spec").(object)
	containers := list(pod, "containers")
	if len(containers) != 1 {
		return ""
	}
	args := toStrings(list(containers[0], "args"))
	for _, want := range []string{
		fmt.Sprintf("--webhook-address=0.0.0.0:%d", o.webhookPort),
		"--webhook-tls-cert=" + webhookMount + "/tls.crt",
		"--webhook-tls-key=" + webhookMount + "/tls.key",
	} {
		if !contains(args, want) {
			c.failf("%s: args %v lack %q", name(d), args, want)
		}
	}
	secret, readOnly := secretMountedAt(pod, containers[0].(object), webhookMount)
	if secret == "" {
		c.failf("%s: no Secret is mounted at %s", name(d), webhookMount)
	} else if !readOnly {
		c.failf("%s: the webhook certificate mount is not readOnly", name(d))
	}
	return secret
}

func decodeCertificates(what string, data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", what, err)
		}
		certs = append(certs, cert)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("%s: no PEM certificate", what)
	}
	return certs, nil
}

// checkGeneratedCertificate checks the chart-made Secret: a kubernetes.io/tls
// pair whose certificate the caBundle verifies for every name of the Service,
// as the API server verifies it.
func (c *checker) checkGeneratedCertificate(docs []document, secretName, caBundle string, dnsNames []string, o options) {
	var secret object
	for _, s := range webhookObjects(docs, "Secret") {
		if str(s, "metadata", "name") == secretName {
			secret = s
		}
	}
	if secret == nil {
		c.failf("no Secret %s for the mounted webhook certificate", secretName)
		return
	}
	if str(secret, "type") != "kubernetes.io/tls" {
		c.failf("%s: type is %q, want kubernetes.io/tls", name(secret), str(secret, "type"))
	}
	decoded := map[string][]byte{}
	for _, key := range []string{"tls.crt", "tls.key", "ca.crt"} {
		value, err := base64.StdEncoding.DecodeString(str(secret, "data", key))
		if err != nil || len(value) == 0 {
			c.failf("%s: data[%s] is not base64 PEM (%v)", name(secret), key, err)
			return
		}
		decoded[key] = value
	}
	bundle, err := base64.StdEncoding.DecodeString(caBundle)
	if err != nil || len(bundle) == 0 {
		c.failf("the webhook's caBundle is not base64 PEM (%v)", err)
		return
	}
	if !bytes.Equal(bundle, decoded["ca.crt"]) {
		c.failf("the webhook's caBundle is not the Secret's ca.crt")
	}
	pair, err := tls.X509KeyPair(decoded["tls.crt"], decoded["tls.key"])
	if err != nil {
		c.failf("%s: tls.crt and tls.key are not a pair: %v", name(secret), err)
		return
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		c.failf("%s: %v", name(secret), err)
		return
	}
	roots, err := decodeCertificates("caBundle", bundle)
	if err != nil {
		c.failf("%v", err)
		return
	}
	pool := x509.NewCertPool()
	for _, root := range roots {
		pool.AddCert(root)
		if !root.IsCA {
			c.failf("caBundle: %s is not a CA", root.Subject)
		}
	}
	for _, dnsName := range dnsNames {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: dnsName, Roots: pool,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			c.failf("%s: the caBundle does not verify tls.crt for %s: %v", name(secret), dnsName, err)
		}
	}
	if left := time.Until(leaf.NotAfter); left < 365*24*time.Hour {
		c.failf("%s: tls.crt expires in %v", name(secret), left)
	}
	if o.webhookOut != "" {
		for _, key := range []string{"tls.crt", "tls.key"} {
			if err := os.WriteFile(filepath.Join(o.webhookOut, key), decoded[key], 0o600); err != nil {
				c.failf("%v", err)
			}
		}
	}
}

// checkCertManager checks the cert-manager variant: a Certificate for the
// Service's names into the mounted Secret, from the chart's self-signed Issuer
// (or the configured one), and the CA injection annotation naming it.
func (c *checker) checkCertManager(docs []document, secretName, inject string, dnsNames []string, o options) {
	if len(webhookObjects(docs, "Secret")) != 0 {
		c.failf("a Secret is rendered with cert-manager (cert-manager writes it)")
	}
	certs := webhookObjects(docs, "Certificate")
	if len(certs) != 1 {
		c.failf("want 1 Certificate, got %d", len(certs))
		return
	}
	cert := certs[0]
	if str(cert, "apiVersion") != "cert-manager.io/v1" {
		c.failf("%s: apiVersion is %q", name(cert), str(cert, "apiVersion"))
	}
	if str(cert, "spec", "secretName") != secretName {
		c.failf("%s: secretName is %q, but the Deployment mounts %q", name(cert), str(cert, "spec", "secretName"), secretName)
	}
	if got := toStrings(list(cert, "spec", "dnsNames")); !sameSet(got, dnsNames) {
		c.failf("%s: dnsNames are %v, want %v", name(cert), got, dnsNames)
	}
	if want := o.releaseNamespace + "/" + str(cert, "metadata", "name"); inject != want {
		c.failf("cert-manager.io/inject-ca-from is %q, want %q", inject, want)
	}
	issuers := webhookObjects(docs, "Issuer")
	ref := str(cert, "spec", "issuerRef", "kind") + "/" + str(cert, "spec", "issuerRef", "name")
	if o.issuer != "" {
		if ref != o.issuer || len(issuers) != 0 {
			c.failf("%s: issuerRef is %s with %d Issuers rendered, want %s and none", name(cert), ref, len(issuers), o.issuer)
		}
		return
	}
	if len(issuers) != 1 {
		c.failf("want 1 Issuer, got %d", len(issuers))
		return
	}
	if ref != "Issuer/"+str(issuers[0], "metadata", "name") {
		c.failf("%s: issuerRef is %s, want the rendered %s", name(cert), ref, name(issuers[0]))
	}
	if _, ok := get(issuers[0], "spec", "selfSigned").(object); !ok {
		c.failf("%s: not selfSigned", name(issuers[0]))
	}
}
