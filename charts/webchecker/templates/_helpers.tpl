{{/* Chart name, truncated to the 63 characters a label value allows. */}}
{{- define "webchecker.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Fully qualified app name: the prefix of every object this release creates.
The release name alone when it already contains the chart name.
*/}}
{{- define "webchecker.fullname" -}}
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

{{- define "webchecker.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels on every object. */}}
{{- define "webchecker.labels" -}}
helm.sh/chart: {{ include "webchecker.chart" . }}
{{ include "webchecker.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: webchecker
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Labels that select the manager's pods; immutable once installed. */}}
{{- define "webchecker.selectorLabels" -}}
app.kubernetes.io/name: {{ include "webchecker.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "webchecker.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "webchecker.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Namespace of the replicas' Leases: the release namespace unless set. */}}
{{- define "webchecker.leaseNamespace" -}}
{{- default .Release.Namespace .Values.sharding.leaseNamespace }}
{{- end }}

{{- define "webchecker.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{/* The metrics port's URL scheme. */}}
{{- define "webchecker.metricsScheme" -}}
{{- if .Values.metrics.secure }}https{{ else }}http{{ end }}
{{- end }}

{{/*
The labels the rules aggregate per-checker series by: namespace, name and
the label_<name> of every manager.metricLabelsAllowlist entry, sanitized as
the manager does, so that alerts carry them for routing.
*/}}
{{- /*
webchecker.inMaintenance selects, by namespace and name, the checkers that
were in a maintenance window (webchecker_maintenance 1, exported by the
owner of a checker that has windows) at some instant of the last .range:
rules leave them out with `unless on (namespace, name)`; the look-back
bridges a checker's move between replicas, as for webchecker_ready.
*/}}
{{- define "webchecker.inMaintenance" -}}
(max by (namespace, name) (max_over_time(webchecker_maintenance[{{ .range }}])) == 1)
{{- end }}

{{- /*
webchecker.notPaged selects the checkers no alert pages for: those in a
maintenance window (webchecker.inMaintenance) and those failing while a
checker they depend on is down (webchecker_dependency_down 1, from the
dependent's owner), at some instant of the last .range.
*/}}
{{- define "webchecker.notPaged" -}}
({{ include "webchecker.inMaintenance" . }} or (max by (namespace, name) (max_over_time(webchecker_dependency_down[{{ .range }}])) == 1))
{{- end }}

{{- define "webchecker.checkerBy" -}}
namespace, name
{{- range .Values.manager.metricLabelsAllowlist }}, label_{{ regexReplaceAll "[^a-zA-Z0-9_]" . "_" }}{{ end }}
{{- end }}

{{- /*
webchecker.resources is .Values.resources, with the memory request and
limit derived from sizing.expectedCheckers when it is set. A replica held
about 44 MiB plus 5.7 MiB per 1,000 checkers in the bench's realistic
profile while it probed a third of them and carried all after a failure
(every replica caches and schedules every checker and builds the targets
of those it probes: e2e/bench/README.md#memory): that is the request,
rounded up to 16 Mi.
The limit is 3/2 of it, rounded up to 32 Mi: the probes in flight may
hold a quarter of GOMEMLIMIT (the limit), and a replica that carries the
others' checkers after a failure holds more of them in flight.
*/}}
{{- define "webchecker.resources" -}}
{{- $resources := deepCopy .Values.resources }}
{{- with .Values.sizing.expectedCheckers }}
{{- $steady := addf 44 (mulf 5.7 (divf . 1000)) }}
{{- $request := mul (ceil (divf $steady 16) | int) 16 }}
{{- $limit := mul (ceil (divf (mulf $steady 3) 64) | int) 32 }}
{{- $_ := set $resources "requests" (merge (dict "memory" (printf "%dMi" $request)) (omit ($resources.requests | default dict) "memory")) }}
{{- $_ := set $resources "limits" (merge (dict "memory" (printf "%dMi" $limit)) (omit ($resources.limits | default dict) "memory")) }}
{{- end }}
{{- toYaml $resources }}
{{- end }}
