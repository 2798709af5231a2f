#!/usr/bin/env bash
# Checks the Helm chart in helm/facet without a helm binary or a cluster:
#   1. helm/facet/crds/ holds byte-identical copies of crds/ (always runs);
#   2. renders the chart with Go's text/template + sprig (render/render.go),
#      with default values and with the overrides in testdata/, and checks the
#      objects (check/check.go): Deployment hardening, probes and flags,
#      least-privilege RBAC, the Service, NOTES.txt and its client bootstrap,
#      the admission webhook (check/webhook.go) with generated certificates
#      (the caBundle verifies the Secret's certificate) and with cert-manager,
#      the xDS and admin ports' TLS (Secret or cert-manager, mTLS client CA),
#      the admin port kept off the Service, the NetworkPolicy (check/tls.go),
#      the relay tier as a Deployment or a DaemonSet (check/relay.go);
#   3. runs the rendered XdsAuthority objects through `facet validate`;
#   4. starts `facet relay` on the relay configuration the chart renders.
# Step 2 needs Debian's golang-go, golang-github-masterminds-sprig-dev and
# golang-gopkg-yaml.v3-dev; without them the test reports SKIP (exit 77) after
# step 1.
#
# Usage: helm_chart_test.sh REPO WORK_DIR [FACET_BINARY]
set -u
repo=${1:?usage: helm_chart_test.sh REPO WORK_DIR [FACET_BINARY]}
work=${2:?usage: helm_chart_test.sh REPO WORK_DIR [FACET_BINARY]}
facet=${3:-}
chart=${repo}/helm/facet
here=${repo}/test/helm
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# 1. The chart's CRDs are the project's, byte for byte.
for crd in "${repo}"/crds/*.yaml; do
  copy=${chart}/crds/$(basename "${crd}")
  if [[ ! -f ${copy} ]]; then
    fail "${copy} is missing (copy ${crd} into the chart)"
  elif ! cmp -s "${crd}" "${copy}"; then
    fail "${copy} differs from ${crd} (copy it again)"
  fi
done
for copy in "${chart}"/crds/*; do
  [[ -f ${repo}/crds/$(basename "${copy}") ]] || fail "${copy} has no counterpart in crds/"
done
if ((failures > 0)); then exit 1; fi
echo "crds: helm/facet/crds/ matches crds/"

# 2. Render and check.
# shellcheck source=go_tools.sh
source "${here}/go_tools.sh"
build_go_tools "${here}" "${work}"

# render_case NAME RELEASE NAMESPACE [VALUES_FILE]: renders into WORK/NAME.yaml
# and WORK/NAME.notes.txt.
render_case() {
  local case=$1 release=$2 namespace=$3
  local values=()
  if [[ $# -ge 4 ]]; then values=(--values "$4"); fi
  if ! "${work}/render" --chart "${chart}" --name "${release}" --namespace "${namespace}" \
    "${values[@]}" --notes "${work}/${case}.notes.txt" >"${work}/${case}.yaml"; then
    fail "rendering ${case} failed"
    return 1
  fi
}

check_case() {
  "${work}/check" "$@" || fail "check ${*}"
}

if render_case default facet facet-system; then
  check_case --manifests "${work}/default.yaml" --notes "${work}/default.notes.txt" \
    --release-namespace facet-system --replicas 2 --lease facet-controller \
    --server-uri facet.facet-system.svc.cluster.local:18000 \
    --arg=--xds-address=0.0.0.0:18000 --arg=--admin-address=0.0.0.0:18080 \
    --arg=--allow-old-style-names=true --arg=--leader-election=true \
    --arg=--gateway-api=true --arg=--cluster-domain=cluster.local \
    --arg=--gateway-client-namespace-param=namespace \
    --arg=--leader-election-namespace=facet-system --arg=--leader-election-lease=facet-controller \
    --arg=--log-level=info --absent-flag=--namespaces --absent-flag=--node-metadata-params \
    --absent-flag=--kubeconfig --absent-flag=--csds-readers --webhook generated \
    --failure-policy Fail --webhook-timeout 10 --webhook-port 9443
fi

if render_case webhook-cert-manager facet facet-system "${here}/testdata/webhook-cert-manager.yaml"; then
  check_case --manifests "${work}/webhook-cert-manager.yaml" \
    --notes "${work}/webhook-cert-manager.notes.txt" --release-namespace facet-system --replicas 2 \
    --lease facet-controller --webhook certManager
fi

if render_case overrides prod xds "${here}/testdata/overrides.yaml"; then
  check_case --manifests "${work}/overrides.yaml" --notes "${work}/overrides.notes.txt" \
    --release-namespace xds --replicas 3 --namespaces team-a,team-b --lease facet-leader \
    --authorities a-example,b.example,xds-example-com \
    --bootstrap-authorities a.example,b.example,xds.example.com:443 \
    --server-uri prod-facet.xds.svc.cluster.local:18000 \
    --arg=--namespaces=team-a,team-b --arg=--node-metadata-params=env,version=app_version \
    --arg=--allow-old-style-names=false --arg=--leader-election=true \
    --arg=--leader-election-namespace=xds --arg=--leader-election-lease=facet-leader \
    --arg=--log-level=debug '--arg=--csds-readers=spiffe://cluster.local/ns/ops/*,ops.example.com' \
    --authorities-out "${work}/overrides.authorities.yaml" \
    --webhook certManager --issuer ClusterIssuer/cluster-ca --failure-policy Ignore \
    --webhook-timeout 5 --webhook-port 8443 \
    --xds-tls certManager --xds-tls-secret prod-facet-xds-tls --xds-issuer ClusterIssuer/mesh-ca \
    --xds-client-ca prod-facet-xds-tls/ca.crt --admin-tls secret --admin-tls-secret facet-admin-tls \
    --admin-service --network-policy --xds-peers 1 --admin-peers 2
  grep -q 'image: "registry.example/facet:0.1.0-test"' "${work}/overrides.yaml" ||
    fail "overrides: image is not registry.example/facet:0.1.0-test"
  grep -q '"app_version": "CHANGE_ME"' "${work}/overrides.notes.txt" ||
    fail "overrides: the bootstrap lacks the node-metadata field app_version"
fi

# The Gateway API off: no flag turns it on, no rule grants its objects, the
# notes do not ask for its CRDs; the cluster domain still reaches the flag.
if render_case gateway-off facet facet-system "${here}/testdata/gateway-off.yaml"; then
  check_case --manifests "${work}/gateway-off.yaml" --notes "${work}/gateway-off.notes.txt" \
    --release-namespace facet-system --replicas 2 --lease facet-controller --gateway-api=false \
    --cluster-domain corp.example \
    --arg=--gateway-api=false --arg=--cluster-domain=corp.example \
    --absent-flag=--gateway-client-namespace-param \
    --server-uri facet.facet-system.svc.corp.example:18000
fi

if render_case tls-secret facet facet-system "${here}/testdata/tls-secret.yaml"; then
  check_case --manifests "${work}/tls-secret.yaml" --notes "${work}/tls-secret.notes.txt" \
    --release-namespace facet-system --replicas 2 --lease facet-controller \
    --xds-tls secret --xds-tls-secret xds-serving --admin-tls certManager \
    --admin-tls-secret facet-admin-tls --admin-issuer Issuer/internal-ca --network-policy
fi

if render_case no-leader-election facet facet-system "${here}/testdata/no-leader-election.yaml"; then
  check_case --manifests "${work}/no-leader-election.yaml" \
    --notes "${work}/no-leader-election.notes.txt" --release-namespace facet-system --replicas 1 \
    --arg=--leader-election=false --absent-flag=--leader-election-namespace \
    --absent-flag=--leader-election-lease --webhook off --absent-flag=--webhook-address \
    --absent-flag=--webhook-tls-cert --absent-flag=--webhook-tls-key
  grep -q 'serviceAccountName: facet-preexisting' "${work}/no-leader-election.yaml" ||
    fail "no-leader-election: serviceAccountName is not facet-preexisting"
fi

# The relay tier: a Deployment fetching over TLS from the release's own xDS
# Service, admitted by the NetworkPolicy; the notes point clients at it.
if render_case relay facet facet-system "${here}/testdata/relay.yaml"; then
  check_case --manifests "${work}/relay.yaml" --notes "${work}/relay.notes.txt" \
    --release-namespace facet-system --replicas 2 --lease facet-controller \
    --server-uri facet-relay.facet-system.svc.cluster.local:18000 \
    --xds-tls certManager --xds-tls-secret facet-xds-tls --xds-issuer ClusterIssuer/mesh-ca \
    --network-policy --xds-peers 2 \
    --relay Deployment --relay-replicas 3 \
    --relay-upstream facet.facet-system.svc.cluster.local:18000 --relay-creds tls \
    --relay-ca-secret facet-xds-tls --relay-arg=--xds-address=0.0.0.0:18000 \
    --relay-arg=--admin-address=0.0.0.0:18080 --relay-arg=--upstream-protocol=delta \
    --relay-arg=--upstream-linger=30s --relay-arg=--log-level=info
fi

# A node-local relay DaemonSet in front of another relay tier.
if render_case relay-daemonset facet facet-system "${here}/testdata/relay-daemonset.yaml"; then
  check_case --manifests "${work}/relay-daemonset.yaml" \
    --notes "${work}/relay-daemonset.notes.txt" --release-namespace facet-system --replicas 2 \
    --lease facet-controller --server-uri facet-relay.facet-system.svc.cluster.local:18000 \
    --xds-tls secret --xds-tls-secret xds-serving \
    --relay DaemonSet --relay-upstream facet-relay-core.xds.svc.cluster.local:18000 \
    --relay-creds insecure --relay-arg=--upstream-protocol=sotw \
    --relay-arg=--log-level=debug --relay-arg=--node-metadata-params=env,zone \
    --relay-config-out "${work}/relay-daemonset.relay.json"
  grep -q 'internalTrafficPolicy: Local' "${work}/relay-daemonset.yaml" ||
    fail "relay-daemonset: the relay Service is not internalTrafficPolicy Local"
  grep -q '"payments.example.com": {}' "${work}/relay-daemonset.yaml" ||
    fail "relay-daemonset: relay.config's authority is not in the relay's configuration"
fi

# Invalid values are refused with the message in their "# expect:" line.
for values in "${here}"/testdata/invalid-*.yaml; do
  want=$(sed -n 's/^# expect: //p' "${values}")
  if "${work}/render" --chart "${chart}" --values "${values}" >/dev/null 2>"${work}/invalid.err"; then
    fail "$(basename "${values}"): rendered, want an error"
  elif ! grep -qF -- "${want}" "${work}/invalid.err"; then
    fail "$(basename "${values}"): error $(cat "${work}/invalid.err"), want \"${want}\""
  fi
done

# 3. The XdsAuthority objects the chart creates pass Facet's own checks.
if [[ -n ${facet} && ! -x ${facet} ]]; then
  fail "no facet binary at ${facet} (build the facet target first)"
elif [[ -n ${facet} && -f ${work}/overrides.authorities.yaml ]]; then
  if ! "${facet}" validate "${work}/overrides.authorities.yaml"; then
    fail "facet validate rejects the rendered XdsAuthority objects"
  fi
fi

# 4. `facet relay` accepts the configuration the chart writes (its upstream
# moved to a loopback port nothing listens on): it starts, and stops on
# SIGTERM with status 0.
if [[ -n ${facet} && -f ${work}/relay-daemonset.relay.json ]]; then
  sed 's/"server_uri": "[^"]*"/"server_uri": "127.0.0.1:1"/' \
    "${work}/relay-daemonset.relay.json" >"${work}/relay-local.json"
  rm -f "${work}/relay.ready"
  "${facet}" relay --config "${work}/relay-local.json" --xds-address 127.0.0.1:0 \
    --admin-address 127.0.0.1:0 --ready-file "${work}/relay.ready" --log-level=error &
  relay_pid=$!
  for _ in $(seq 100); do
    [[ -s ${work}/relay.ready ]] || ! kill -0 "${relay_pid}" 2>/dev/null && break
    sleep 0.1
  done
  if [[ ! -s ${work}/relay.ready ]]; then
    fail "facet relay did not start on the chart's relay configuration"
    kill "${relay_pid}" 2>/dev/null
    wait "${relay_pid}"
  else
    kill -TERM "${relay_pid}"
    wait "${relay_pid}" || fail "facet relay on the chart's relay configuration exited $?"
  fi
fi

if ((failures > 0)); then exit 1; fi
echo "helm chart: ok"
