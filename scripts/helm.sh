#!/usr/bin/env bash
# Helm for the codeask chart, built from source with the Go toolchain and cached.
# Usage: scripts/helm.sh install|path|check
#   install  build helm once into the cache (a second run is instant)
#   path     print the cached helm binary (installing it first if needed)
#   check    helm lint + helm template with default and production-like values; exits non-zero
#            on any failure (CI runs this before the chart consistency test)
# Env: CODEASK_HELM_VERSION (default below), CODEASK_BIN_DIR (default ~/.cache/codeask/bin).
set -euo pipefail

HELM_VERSION=${CODEASK_HELM_VERSION:-v3.19.5}
BIN_DIR=${CODEASK_BIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/codeask/bin}
VERSIONED=$BIN_DIR/helm-$HELM_VERSION
LINK=$BIN_DIR/helm
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CHART=$ROOT/helm/codeask
RELEASE=codeask

log() { echo "[helm.sh] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

install_helm() {
  if [[ -x $VERSIONED ]]; then
    ln -sfn "helm-$HELM_VERSION" "$LINK"
    return 0
  fi
  command -v go >/dev/null || die "go not found (Helm is built from source with 'go install')"
  log "building helm $HELM_VERSION with go install (first run only)"
  mkdir -p "$BIN_DIR"
  local tmp; tmp=$(mktemp -d "$BIN_DIR/.build.XXXXXX")
  # shellcheck disable=SC2064  # expand now: $tmp is local
  trap "rm -rf '$tmp'" EXIT
  # The ldflags are those of upstream's Makefile: without them `helm version` says
  # "unreleased" and `helm template` assumes Kubernetes 1.20 (rejecting kubeVersion >=1.25).
  # The default Kubernetes version follows the client-go that this Helm release builds with.
  local gomod k8s_minor
  gomod=$(go mod download -json "helm.sh/helm/v3@$HELM_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  k8s_minor=$(awk '$1 == "k8s.io/client-go" {split($2, v, "."); print v[2]}' "$gomod")
  [[ $k8s_minor =~ ^[0-9]+$ ]] || die "cannot read the client-go version from $gomod"
  local x="-X helm.sh/helm/v3"
  local ldflags="-s -w $x/internal/version.version=$HELM_VERSION"
  ldflags+=" $x/pkg/lint/rules.k8sVersionMajor=1 $x/pkg/lint/rules.k8sVersionMinor=$k8s_minor"
  ldflags+=" $x/pkg/chartutil.k8sVersionMajor=1 $x/pkg/chartutil.k8sVersionMinor=$k8s_minor"
  # CGO is off so the binary is static and independent of the machine's libc.
  CGO_ENABLED=0 GOBIN=$tmp GOFLAGS=-buildvcs=false go install -ldflags "$ldflags" \
    "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
  mv "$tmp/helm" "$VERSIONED"
  ln -sfn "helm-$HELM_VERSION" "$LINK"
  log "installed $("$VERSIONED" version --short) at $LINK"
}

# The optional OpenSearch dependency is fetched by `helm dependency update`, which needs its
# chart repository; offline (CI) it is "missing" and helm refuses to render. A disabled
# subchart renders nothing, so an identical copy without the dependency renders the same
# manifests; a guard template makes that copy fail if some values enable OpenSearch.
offline_chart() {
  if ! "$VERSIONED" dependency list "$CHART" | awk 'NR > 1 && $NF == "missing" {m = 1} END {exit !m}'; then
    echo "$CHART"
    return
  fi
  local copy; copy=$(mktemp -d "${TMPDIR:-/tmp}/codeask-chart.XXXXXX")/codeask
  cp -R "$CHART" "$copy"
  # dependencies is the last top-level key of Chart.yaml; refuse to guess if that changes.
  awk 'f && /^[^ #-]/ {exit 1} /^dependencies:/ {f = 1}' "$copy/Chart.yaml" \
    || die "Chart.yaml: 'dependencies' must stay the last top-level key"
  sed -i '/^dependencies:/,$d' "$copy/Chart.yaml"
  cat >"$copy/templates/zz-offline-guard.yaml" <<'TPL'
{{- if .Values.opensearch.enabled }}
{{- fail "opensearch.enabled needs the OpenSearch chart: run `helm dependency update helm/codeask`" }}
{{- end }}
TPL
  log "optional dependency not downloaded: checking a copy without it ($copy)"
  echo "$copy"
}

# Each values set is linted and rendered; the rendered YAML must also be non-empty.
check_chart() {
  local helm=$VERSIONED chart
  chart=$(offline_chart)
  local -a sets=("defaults:" "production:$CHART/ci/production-values.yaml")
  local entry name file out
  for entry in "${sets[@]}"; do
    name=${entry%%:*}
    file=${entry#*:}
    local -a args=()
    [[ -n $file ]] && args=(--values "$file")
    log "helm lint --strict ($name values)"
    "$helm" lint --strict "$chart" "${args[@]}"
    log "helm template ($name values)"
    out=$("$helm" template "$RELEASE" "$chart" --namespace codeask "${args[@]}")
    [[ -n $out ]] || die "helm template rendered nothing for $name values"
    log "rendered $(grep -c '^kind:' <<<"$out") manifests for $name values"
  done
  [[ $chart == "$CHART" ]] || rm -rf "$(dirname "$chart")"
}

case ${1:-} in
  install) install_helm ;;
  path) install_helm; echo "$LINK" ;;
  check) install_helm; check_chart; log "chart OK" ;;
  *) echo "usage: $0 install|path|check" >&2; exit 2 ;;
esac
