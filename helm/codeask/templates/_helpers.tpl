{{/* Chart name, overridable. */}}
{{- define "codeask.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Release-scoped name: "<release>-codeask" unless the release name already says codeask. */}}
{{- define "codeask.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "codeask.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "codeask.labels" -}}
helm.sh/chart: {{ include "codeask.chart" . }}
{{ include "codeask.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "codeask.selectorLabels" -}}
app.kubernetes.io/name: {{ include "codeask.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Selector labels of one component; call with (dict "root" $ "component" "serve"). */}}
{{- define "codeask.componentSelector" -}}
{{ include "codeask.selectorLabels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "codeask.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "codeask.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "codeask.secretName" -}}
{{- default (include "codeask.fullname" .) .Values.existingSecret }}
{{- end }}

{{- define "codeask.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* Where the pods keep scratch data; the Dockerfile uses the same path. */}}
{{- define "codeask.dataDir" -}}/data{{- end }}

{{/* OpenSearch as codeask sees it: the subchart's service when enabled, else external. */}}
{{- define "codeask.opensearch" -}}
{{- if .Values.opensearch.enabled }}
url: https://opensearch-cluster-master:9200
user: admin
verifyCerts: {{ .Values.opensearch.verifyCerts }}
{{- else }}
url: {{ required "externalOpenSearch.url is required" .Values.externalOpenSearch.url }}
user: {{ .Values.externalOpenSearch.user | quote }}
verifyCerts: {{ .Values.externalOpenSearch.verifyCerts }}
{{- end }}
{{- end }}

{{/* The ConfigMap's data: chart-managed settings, then the free-form config map. */}}
{{- define "codeask.configData" -}}
{{- $os := include "codeask.opensearch" . | fromYaml }}
{{- $managed := dict
  "CODEASK_STORE" .Values.store
  "CODEASK_OPENSEARCH_URL" $os.url
  "CODEASK_OPENSEARCH_USER" $os.user
  "CODEASK_OPENSEARCH_VERIFY_CERTS" $os.verifyCerts
  "CODEASK_DATA_DIR" (include "codeask.dataDir" .)
  "CODEASK_HOST" "0.0.0.0"
  "CODEASK_PORT" .Values.serve.port }}
{{- range $key, $value := .Values.config }}
{{- if hasKey $managed $key }}
{{- fail (printf "config.%s is set by the chart from other values; see values.yaml" $key) }}
{{- end }}
{{- if not (hasPrefix "CODEASK_" $key) }}
{{- fail (printf "config.%s: only CODEASK_* settings belong in config (use extraEnv)" $key) }}
{{- end }}
{{- if has $key (list "CODEASK_EMBED_THREADS" "CODEASK_RECONCILE_SECONDS") }}
{{- fail (printf "config.%s is set per component (serve/worker.embedThreads, reconcile.enabled)" $key) }}
{{- end }}
{{- if hasKey $.Values.secrets $key }}
{{- fail (printf "config.%s is a secret: set it under secrets or in existingSecret" $key) }}
{{- end }}
{{- end }}
{{- range $key, $value := merge (dict) $managed .Values.config }}
{{- if ne (toString $value) "" }}
{{ $key }}: {{ toString $value | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/* Environment shared by every codeask container: ConfigMap, then secret keys. */}}
{{- define "codeask.envFrom" -}}
- configMapRef:
    name: {{ include "codeask.fullname" . }}
{{- end }}

{{- define "codeask.secretEnv" -}}
{{- $secretName := include "codeask.secretName" . }}
{{- range $key, $_ := .Values.secrets }}
- name: {{ $key }}
  valueFrom:
    secretKeyRef:
      name: {{ $secretName }}
      key: {{ $key }}
      optional: {{ not (has $key $.Values.requiredSecretKeys) }}
{{- end }}
{{- end }}

{{/* Library caches go to the writable data volume; nothing may reach a model hub. */}}
{{- define "codeask.runtimeEnv" -}}
- name: HF_HUB_OFFLINE
  value: "1"
- name: LITELLM_LOCAL_MODEL_COST_MAP
  value: "True"
- name: XDG_CACHE_HOME
  value: {{ include "codeask.dataDir" . }}/cache
- name: HF_HOME
  value: {{ include "codeask.dataDir" . }}/cache/huggingface
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Writable scratch space under a read-only root filesystem. */}}
{{- define "codeask.volumes" -}}
- name: tmp
  emptyDir:
    sizeLimit: {{ .Values.volumes.tmp.sizeLimit }}
- name: data
  emptyDir:
    sizeLimit: {{ .Values.volumes.data.sizeLimit }}
{{- end }}

{{- define "codeask.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
- name: data
  mountPath: {{ include "codeask.dataDir" . }}
{{- end }}

{{/* Roll pods when the settings they load change. */}}
{{- define "codeask.checksums" -}}
checksum/config: {{ include (print $.Template.BasePath "/configmap.yaml") . | sha256sum }}
{{- if not .Values.existingSecret }}
checksum/secret: {{ include (print $.Template.BasePath "/secret.yaml") . | sha256sum }}
{{- end }}
{{- end }}

{{/*
The pod spec every codeask workload shares. Call with a dict:
  root: $, component: "serve", args: (list "serve"), values: the component's values,
  env: extra env entries (YAML list text), extra: more container fields (YAML map text),
  waitForMigrations: true to start only once the metadata database is at head.
*/}}
{{- define "codeask.podSpec" -}}
{{- $root := .root }}
serviceAccountName: {{ include "codeask.serviceAccountName" $root }}
automountServiceAccountToken: false
{{- with $root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml $root.Values.podSecurityContext | nindent 2 }}
{{- if and .waitForMigrations $root.Values.migrations.waitSeconds }}
# Start only on a migrated database (the post-install / pre-upgrade Job migrates it).
initContainers:
  - name: wait-for-migrations
    image: {{ include "codeask.image" $root | quote }}
    imagePullPolicy: {{ $root.Values.image.pullPolicy }}
    args: ["db", "current", "--wait", {{ $root.Values.migrations.waitSeconds | quote }}]
    envFrom:
      {{- include "codeask.envFrom" $root | nindent 6 }}
    env:
      {{- include "codeask.secretEnv" $root | trim | nindent 6 }}
      {{- include "codeask.runtimeEnv" $root | nindent 6 }}
    resources:
      {{- toYaml $root.Values.migrations.resources | nindent 6 }}
    securityContext:
      {{- toYaml $root.Values.securityContext | nindent 6 }}
    volumeMounts:
      {{- include "codeask.volumeMounts" $root | nindent 6 }}
{{- end }}
containers:
  - name: {{ .component }}
    image: {{ include "codeask.image" $root | quote }}
    imagePullPolicy: {{ $root.Values.image.pullPolicy }}
    args:
      {{- toYaml .args | nindent 6 }}
    envFrom:
      {{- include "codeask.envFrom" $root | nindent 6 }}
    env:
      {{- include "codeask.secretEnv" $root | trim | nindent 6 }}
      {{- include "codeask.runtimeEnv" $root | nindent 6 }}
      {{- with .env }}
      {{- . | nindent 6 }}
      {{- end }}
    {{- with .extra }}
    {{- . | nindent 4 }}
    {{- end }}
    resources:
      {{- toYaml .values.resources | nindent 6 }}
    securityContext:
      {{- toYaml $root.Values.securityContext | nindent 6 }}
    volumeMounts:
      {{- include "codeask.volumeMounts" $root | nindent 6 }}
volumes:
  {{- include "codeask.volumes" $root | nindent 2 }}
{{- with .values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
