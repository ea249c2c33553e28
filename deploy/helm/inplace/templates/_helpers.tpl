{{/*
The chart's name, truncated to 63 characters (a label value's limit).
*/}}
{{- define "inplace.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The release's full name: <release>-inplace, or the release name alone when it already names the
chart (`helm install inplace ...` gives "inplace"). Every object is named after it.
*/}}
{{- define "inplace.fullname" -}}
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

{{- define "inplace.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "inplace.selectorLabels" -}}
app.kubernetes.io/name: {{ include "inplace.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end }}

{{- define "inplace.labels" -}}
helm.sh/chart: {{ include "inplace.chart" . }}
{{ include "inplace.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "inplace.serviceAccountName" -}}
{{- default (include "inplace.fullname" .) .Values.serviceAccount.name }}
{{- end }}

{{/* The webhook's Service (port 443 to the pods' webhook port). */}}
{{- define "inplace.webhookService" -}}
{{- printf "%s-webhook" (include "inplace.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The Secret holding the webhook's CA and serving certificate, shared by the replicas. */}}
{{- define "inplace.secretName" -}}
{{- printf "%s-webhook-tls" (include "inplace.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The MutatingWebhookConfiguration the leader writes (cluster-scoped). */}}
{{- define "inplace.webhookConfiguration" -}}
{{- include "inplace.fullname" . }}
{{- end }}

{{/* The Lease the replicas elect their leader on. */}}
{{- define "inplace.leaseName" -}}
{{- include "inplace.fullname" . }}
{{- end }}

{{- define "inplace.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
