{{/* The chart name, or nameOverride. */}}
{{- define "facet.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The name of the release's objects: fullnameOverride, else the release name
when it already contains the chart name, else "<release>-<chart>".
*/}}
{{- define "facet.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "facet.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels that select the pods; never change them after the first install. */}}
{{- define "facet.selectorLabels" -}}
app.kubernetes.io/name: {{ include "facet.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "facet.labels" -}}
helm.sh/chart: {{ include "facet.chart" . }}
{{ include "facet.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: controller
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "facet.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "facet.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The xDS server's address as clients in the cluster dial it. */}}
{{- define "facet.xdsServerUri" -}}
{{- printf "%s.%s.svc.%s:%v" (include "facet.fullname" .) .Release.Namespace .Values.clusterDomain .Values.xds.port -}}
{{- end -}}

{{/* Renders a boolean value as a flag value, rejecting anything but true or false. */}}
{{- define "facet.bool" -}}
{{- if not (kindIs "bool" .value) -}}
{{- fail (printf "%s must be true or false, got %v" .name .value) -}}
{{- end -}}
{{- .value -}}
{{- end -}}

{{/*
The rules of the least-privilege access to XdsResources: read them, write
their status. Nothing else (no create, delete or patch of the objects).
*/}}
{{- define "facet.xdsResourceRules" -}}
- apiGroups: ["facet.dev"]
  resources: ["xdsresources"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["facet.dev"]
  resources: ["xdsresources/status"]
  verbs: ["update", "patch"]
# Each XdsResource's last accepted spec, kept so that every replica serves it
# while the object's current generation is invalid (owned by the object).
- apiGroups: ["apps"]
  resources: ["controllerrevisions"]
  verbs: ["get", "list", "watch", "create", "delete"]
# The endpoints of endpointsFrom variants (slices of Services in watched
# namespaces only).
- apiGroups: ["discovery.k8s.io"]
  resources: ["endpointslices"]
  verbs: ["list", "watch"]
{{- if .Values.gatewayAPI.enabled }}
# The Gateway API: Services (each TCP port is served), GRPCRoutes and their
# status (Facet's entries in status.parents), ReferenceGrants, and
# XdsVariantPolicies and their status (status.ancestors).
- apiGroups: [""]
  resources: ["services"]
  verbs: ["list", "watch"]
- apiGroups: ["gateway.networking.k8s.io"]
  resources: ["grpcroutes"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["gateway.networking.k8s.io"]
  resources: ["grpcroutes/status"]
  verbs: ["update", "patch"]
- apiGroups: ["gateway.networking.k8s.io"]
  resources: ["referencegrants"]
  verbs: ["list", "watch"]
- apiGroups: ["facet.dev"]
  resources: ["xdsvariantpolicies"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["facet.dev"]
  resources: ["xdsvariantpolicies/status"]
  verbs: ["update", "patch"]
{{- end }}
{{- end -}}

{{/* The Secret holding the webhook's serving certificate (tls.crt, tls.key, ca.crt). */}}
{{- define "facet.webhookSecretName" -}}
{{- printf "%s-webhook-tls" (include "facet.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* webhook.certificates, rejecting anything but generated or certManager. */}}
{{- define "facet.webhookCertificates" -}}
{{- $mode := .Values.webhook.certificates -}}
{{- if not (has $mode (list "generated" "certManager")) -}}
{{- fail (printf "webhook.certificates must be generated or certManager, got %v" $mode) -}}
{{- end -}}
{{- $mode -}}
{{- end -}}

{{/* The DNS names the API server may dial the webhook's Service by (a YAML list). */}}
{{- define "facet.webhookDnsNames" -}}
{{- include "facet.serviceDnsNames" . -}}
{{- end -}}

{{/* The DNS names of the release's Service (a YAML list). */}}
{{- define "facet.serviceDnsNames" -}}
{{- $service := include "facet.fullname" . -}}
{{- $ns := .Release.Namespace -}}
- {{ $service }}
- {{ printf "%s.%s" $service $ns }}
- {{ printf "%s.%s.svc" $service $ns }}
- {{ printf "%s.%s.svc.%s" $service $ns .Values.clusterDomain }}
{{- end -}}

{{/*
<port>.tls.certificates of a port ("xds" or "admin"), rejecting anything but
none, secret or certManager. Called with (dict "root" . "port" "xds").
*/}}
{{- define "facet.tlsMode" -}}
{{- $mode := (index .root.Values .port "tls").certificates | default "none" -}}
{{- if not (has $mode (list "none" "secret" "certManager")) -}}
{{- fail (printf "%s.tls.certificates must be none, secret or certManager, got %v" .port $mode) -}}
{{- end -}}
{{- $mode -}}
{{- end -}}

{{/* The Secret with a port's serving certificate (tls.crt, tls.key). Called as facet.tlsMode. */}}
{{- define "facet.tlsSecretName" -}}
{{- $tls := index .root.Values .port "tls" -}}
{{- if eq (include "facet.tlsMode" .) "secret" -}}
{{- required (printf "%s.tls.secretName is required with %s.tls.certificates=secret" .port .port) $tls.secretName -}}
{{- else -}}
{{- $tls.secretName | default (printf "%s-%s-tls" (include "facet.fullname" .root) .port) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The relay tier's name (its workload, Service and ConfigMap). */}}
{{- define "facet.relayName" -}}
{{- printf "%s-relay" (include "facet.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Labels that select the relay pods. The name differs from the controller's, so
the controller's Service and NetworkPolicy never select a relay pod.
*/}}
{{- define "facet.relaySelectorLabels" -}}
app.kubernetes.io/name: {{ printf "%s-relay" (include "facet.name" .) | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "facet.relayLabels" -}}
helm.sh/chart: {{ include "facet.chart" . }}
{{ include "facet.relaySelectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: relay
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* relay.kind, rejecting anything but Deployment or DaemonSet. */}}
{{- define "facet.relayKind" -}}
{{- $kind := .Values.relay.kind | default "Deployment" -}}
{{- if not (has $kind (list "Deployment" "DaemonSet")) -}}
{{- fail (printf "relay.kind must be Deployment or DaemonSet, got %v" $kind) -}}
{{- end -}}
{{- $kind -}}
{{- end -}}

{{/* The relay Service's address as clients in the cluster dial it. */}}
{{- define "facet.relayServerUri" -}}
{{- printf "%s.%s.svc.%s:%v" (include "facet.relayName" .) .Release.Namespace .Values.clusterDomain .Values.relay.port -}}
{{- end -}}

{{/*
How the relay reaches its upstream: "none" (plaintext) or "tls".
relay.upstreamTls.mode, or when empty: tls if the upstream is this release's
xDS Service and that serves TLS, else none.
*/}}
{{- define "facet.relayUpstreamTls" -}}
{{- $mode := .Values.relay.upstreamTls.mode -}}
{{- if not $mode -}}
{{- if and (not .Values.relay.upstream) (ne (include "facet.tlsMode" (dict "root" . "port" "xds")) "none") -}}
{{- $mode = "tls" -}}
{{- else -}}
{{- $mode = "none" -}}
{{- end -}}
{{- end -}}
{{- if not (has $mode (list "none" "tls")) -}}
{{- fail (printf "relay.upstreamTls.mode must be none or tls, got %v" $mode) -}}
{{- end -}}
{{- $mode -}}
{{- end -}}

{{/*
The Secret with the CA certificates the upstream's certificate must chain to,
or "" for the system roots: relay.upstreamTls.caSecret, or for this
release's own TLS xDS Service its serving Secret (cert-manager writes the
issuer's CA there as ca.crt).
*/}}
{{- define "facet.relayUpstreamCaSecret" -}}
{{- if .Values.relay.upstreamTls.caSecret -}}
{{- .Values.relay.upstreamTls.caSecret -}}
{{- else if and (not .Values.relay.upstream) (ne (include "facet.tlsMode" (dict "root" . "port" "xds")) "none") -}}
{{- include "facet.tlsSecretName" (dict "root" . "port" "xds") -}}
{{- end -}}
{{- end -}}
