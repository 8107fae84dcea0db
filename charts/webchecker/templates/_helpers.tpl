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
{{- define "webchecker.checkerBy" -}}
namespace, name
{{- range .Values.manager.metricLabelsAllowlist }}, label_{{ regexReplaceAll "[^a-zA-Z0-9_]" . "_" }}{{ end }}
{{- end }}
