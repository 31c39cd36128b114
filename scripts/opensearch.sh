#!/usr/bin/env bash
# Single-node OpenSearch 2.19.1 + k-NN 2.19.1.0 for codeask, built only from Maven Central.
# Usage: scripts/opensearch.sh start|stop|status      (see docs/opensearch.md)
# Env: CODEASK_OPENSEARCH_HOME (default /opt/codeask-opensearch), CODEASK_OPENSEARCH_PORT (9200),
#      CODEASK_OPENSEARCH_JAVA_HOME (a JDK 17..21; autodetected), CODEASK_OPENSEARCH_HEAP (1g).
set -euo pipefail

OS_VERSION=2.19.1
KNN_VERSION=2.19.1.0
BASE=${CODEASK_OPENSEARCH_HOME:-/opt/codeask-opensearch}
PORT=${CODEASK_OPENSEARCH_PORT:-9200}
HEAP=${CODEASK_OPENSEARCH_HEAP:-1g}         # -Xms = -Xmx; applies at the next start (stop first)
NODE=$BASE/opensearch-$OS_VERSION          # unpacked node; its presence is the install cache
RUN=$BASE/run                               # pidfile lives where the service user can write
PIDFILE=$RUN/opensearch.pid
URL=http://127.0.0.1:$PORT
OS_USER=opensearch
MVN_DEP=org.apache.maven.plugins:maven-dependency-plugin:3.6.1
MARKER=$NODE/.codeask-installed

log() { echo "[opensearch.sh] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# 2.19 needs the Java security manager, which Java 24+ removed, so pick a JDK 17..21.
java_home() {
  local j
  for j in "${CODEASK_OPENSEARCH_JAVA_HOME:-}" "${OPENSEARCH_JAVA_HOME:-}" \
           "$(dirname "$(dirname "$(readlink -f "$(command -v java || echo /nonexistent)")")")" \
           /usr/lib/jvm/java-17-openjdk-* /usr/lib/jvm/java-21-openjdk-* /usr/lib/jvm/temurin-{17,21}-*; do
    [[ -n $j && -x $j/bin/java ]] || continue
    local v; v=$("$j/bin/java" -XshowSettings:properties -version 2>&1 | awk -F'= ' '/java.specification.version/{print $2}')
    [[ $v =~ ^(17|18|19|20|21)$ ]] && { echo "$j"; return; }
  done
  die "no JDK 17..21 found; set CODEASK_OPENSEARCH_JAVA_HOME"
}

# OpenSearch refuses to run as root, so root runs it as a system user; anyone else runs it as self.
as_node_user() {
  if [[ $EUID -eq 0 ]]; then runuser -u "$OS_USER" -- "$@"; else "$@"; fi
}

ensure_user() {
  [[ $EUID -eq 0 ]] || return 0
  id -u "$OS_USER" >/dev/null 2>&1 || useradd --system --no-create-home --home-dir "$BASE" \
    --shell /usr/sbin/nologin "$OS_USER" 2>/dev/null || id -u "$OS_USER" >/dev/null  # racing creator is fine
}

install_node() {
  [[ -f $MARKER ]] && return 0
  local jh; jh=$(java_home)
  command -v mvn >/dev/null || die "mvn not found (needed once to fetch artifacts from Maven Central)"
  log "installing OpenSearch $OS_VERSION + k-NN $KNN_VERSION into $BASE (first run only)"
  mkdir -p "$BASE"
  local tmp; tmp=$(mktemp -d "$BASE/.install.XXXXXX")
  # shellcheck disable=SC2064  # expand now: $tmp is local and gone by the time EXIT fires
  trap "rm -rf '$tmp'" EXIT
  # One throwaway pom lists everything; ~/.m2 then caches it. The integ-test zip is the server
  # with only transport-netty4; lang-painless (required by k-NN) and analysis-common (code
  # analyzers) are published as jars, so we rebuild those two modules by hand. The server jars
  # are excluded from the module deps because lib/ already has them (jar hell otherwise).
  cat >"$tmp/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
 <groupId>codeask</groupId><artifactId>opensearch-fetch</artifactId><version>0</version><packaging>pom</packaging>
 <dependencies>
  <dependency><groupId>org.opensearch.distribution.integ-test-zip</groupId><artifactId>opensearch</artifactId>
   <version>$OS_VERSION</version><type>zip</type><exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion></exclusions></dependency>
  <dependency><groupId>org.opensearch.plugin</groupId><artifactId>opensearch-knn</artifactId>
   <version>$KNN_VERSION</version><type>zip</type><exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion></exclusions></dependency>
  <dependency><groupId>org.opensearch.plugin</groupId><artifactId>lang-painless</artifactId>
   <version>$OS_VERSION</version><exclusions><exclusion><groupId>org.opensearch</groupId><artifactId>*</artifactId></exclusion></exclusions></dependency>
  <dependency><groupId>org.opensearch.plugin</groupId><artifactId>analysis-common</artifactId>
   <version>$OS_VERSION</version><exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion></exclusions></dependency>
 </dependencies></project>
EOF
  JAVA_HOME=$jh mvn -B -f "$tmp/pom.xml" "$MVN_DEP:copy-dependencies" -DoutputDirectory="$tmp/dl" \
    </dev/null >"$tmp/mvn.log" 2>&1 || { tail -n 40 "$tmp/mvn.log" >&2; die "mvn could not fetch the OpenSearch artifacts"; }
  unzip -q "$tmp/dl/opensearch-$OS_VERSION.zip" -d "$tmp"
  local n=$tmp/opensearch-$OS_VERSION
  mkdir -p "$n/modules/lang-painless" "$n/modules/analysis-common"
  mv "$tmp/dl/analysis-common-$OS_VERSION.jar" "$n/modules/analysis-common/"
  mv "$tmp"/dl/*.jar "$n/modules/lang-painless/"   # lang-painless, its SPI, antlr4, asm*
  # Only keys the 2.19 PluginInfo parser knows; an unknown key aborts start-up.
  descriptor() { printf 'description=%s\nversion=%s\nname=%s\nclassname=%s\njava.version=11\nopensearch.version=%s\nextended.plugins=%s\nhas.native.controller=false\n' \
    "$1" "$OS_VERSION" "$2" "$3" "$OS_VERSION" "$4"; }
  descriptor "Painless scripting (rebuilt from Maven jars)" lang-painless org.opensearch.painless.PainlessPlugin "" \
    >"$n/modules/lang-painless/plugin-descriptor.properties"
  descriptor "Common analysis (rebuilt from Maven jars)" analysis-common org.opensearch.analysis.common.CommonAnalysisPlugin lang-painless \
    >"$n/modules/analysis-common/plugin-descriptor.properties"
  # Painless compiles scripts to classes at runtime; same grant as the official module.
  printf 'grant {\n  permission java.lang.RuntimePermission "createClassLoader";\n  permission java.lang.RuntimePermission "getClassLoader";\n};\n' \
    >"$n/modules/lang-painless/plugin-security.policy"
  OPENSEARCH_JAVA_HOME=$jh "$n/bin/opensearch-plugin" install --batch \
    "file://$tmp/dl/opensearch-knn-$KNN_VERSION.zip" >"$tmp/plugin.log" 2>&1 \
    || { cat "$tmp/plugin.log" >&2; die "k-NN plugin install failed"; }
  rm -rf "$NODE" && mv "$n" "$NODE"
  echo "opensearch=$OS_VERSION knn=$KNN_VERSION" >"$MARKER"
  log "installed in $NODE"
}

# Rewritten on every start so port/paths follow the environment even with a cached install.
configure() {
  mkdir -p "$BASE/data" "$BASE/logs" "$RUN"
  cat >"$NODE/config/opensearch.yml" <<EOF
cluster.name: codeask
node.name: codeask-node
discovery.type: single-node
network.host: 127.0.0.1
http.port: $PORT
transport.port: $((PORT + 100))
path.data: $BASE/data
path.logs: $BASE/logs
# Dev/CI disks are often >90% full; watermarks would turn indices read-only.
cluster.routing.allocation.disk.threshold_enabled: false
# Sandboxes may forbid seccomp; the filter is a hardening nicety, not needed here.
bootstrap.system_call_filter: false
action.auto_create_index: true
EOF
  [[ $HEAP =~ ^[0-9]+[mMgG]$ ]] || die "CODEASK_OPENSEARCH_HEAP must look like 1g or 512m, not '$HEAP'"
  printf -- '-Xms%s\n-Xmx%s\n' "$HEAP" "$HEAP" >"$NODE/config/jvm.options.d/heap.options"
  if [[ $EUID -eq 0 ]]; then chown -R "$OS_USER:" "$BASE"; chmod 755 "$BASE"; fi
  as_node_user test -r "$NODE/bin/opensearch" || die "$OS_USER cannot read $NODE (parent dir not traversable? don't use /root)"
}

# Find our JVM by its path.home, not the pidfile: the pidfile appears only seconds after the
# launcher returns, and a stale one (kill -9, reboot) may name a reused pid.
pid() { pgrep -o -f -- "-Dopensearch.path.home=$NODE( |\$)"; }
health() { curl -fsS --max-time 5 "$URL/_cluster/health${1:-}" 2>/dev/null; }

verify_plugins() {
  local plugins; plugins=$(curl -fsS --max-time 10 "$URL/_nodes/plugins?filter_path=nodes.*.plugins.name,nodes.*.modules.name")
  local p; for p in opensearch-knn lang-painless analysis-common; do
    grep -q "\"$p\"" <<<"$plugins" || die "node at $URL lacks $p: $plugins"
  done
}

start() {
  if health >/dev/null; then
    verify_plugins
    log "already running: $URL"; echo "$URL"; return 0
  fi
  mkdir -p "$BASE"
  exec 9>"$BASE/.lock"; flock 9   # CI and a person may start it at the same time
  health >/dev/null && { log "started meanwhile: $URL"; echo "$URL"; return 0; }
  ensure_user
  install_node
  configure
  local p; if p=$(pid); then die "pid $p is alive but $URL does not answer; run '$0 stop' first"; fi
  local jh t0=$SECONDS; jh=$(java_home)
  : >"$BASE/logs/codeask-stdout.log"
  [[ $EUID -eq 0 ]] && chown "$OS_USER:" "$BASE/logs/codeask-stdout.log"
  # -d returns once the JVM is forked (~3 s), so a later crash (e.g. port in use) shows up
  # only as the JVM vanishing.
  local rc=0
  (cd "$NODE" && as_node_user env OPENSEARCH_JAVA_HOME="$jh" OPENSEARCH_PATH_CONF="$NODE/config" \
     bin/opensearch -d -p "$PIDFILE" >>"$BASE/logs/codeask-stdout.log" 2>&1 9>&-) || rc=$?  # 9>&-: don't leak the lock
  until (( rc == 0 )) && health '?wait_for_status=yellow&timeout=3s' >/dev/null; do
    if (( rc != 0 || SECONDS - t0 > 180 )) || ! pid >/dev/null; then
      log "OpenSearch did not come up (launcher rc=$rc, $((SECONDS - t0))s); last 50 lines of $BASE/logs/codeask.log:"
      tail -n 50 "$BASE/logs/codeask.log" >&2 2>/dev/null || true
      log "launcher output (last 20 lines of $BASE/logs/codeask-stdout.log):"
      tail -n 20 "$BASE/logs/codeask-stdout.log" >&2
      exit 1
    fi
    sleep 2
  done
  verify_plugins
  log "up in $((SECONDS - t0))s (pid $(pid)): $URL"
  echo "$URL"
}

stop() {
  local p; if ! p=$(pid); then log "not running"; rm -f "$PIDFILE"; return 0; fi
  kill "$p"
  local _; for _ in $(seq 1 60); do kill -0 "$p" 2>/dev/null || break; sleep 1; done
  if kill -0 "$p" 2>/dev/null; then log "pid $p ignored SIGTERM for 60s; killing"; kill -9 "$p"; fi
  rm -f "$PIDFILE"
  log "stopped"
}

status() {
  local h p; if h=$(health); then echo "running $URL (pid $(pid || echo '?'))"; echo "$h"; return 0; fi
  if p=$(pid); then echo "not answering on $URL (pid $p: starting, or wedged)"; else echo "stopped"; fi
  return 3
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
