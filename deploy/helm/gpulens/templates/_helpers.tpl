{{/*
Names, labels and the agent's command line, shared by every template.
*/}}

{{/* The chart's name, or nameOverride: also the job label Prometheus gives the agent. */}}
{{- define "gpulens.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Object names: fullnameOverride, else the release name if it holds the chart's name, else RELEASE-NAME. */}}
{{- define "gpulens.fullname" -}}
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

{{- define "gpulens.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride }}
{{- end }}

{{- define "gpulens.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "gpulens.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gpulens.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "gpulens.labels" -}}
helm.sh/chart: {{ include "gpulens.chart" . }}
{{ include "gpulens.selectorLabels" . }}
{{- if .Chart.AppVersion }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: gpulens
{{- end }}

{{/* Labels of the prometheus-operator objects: kube-prometheus-stack selects on release. */}}
{{- define "gpulens.monitoringLabels" -}}
{{ include "gpulens.labels" . }}
{{- with .Values.prometheusRelease }}
release: {{ . }}
{{- end }}
{{- end }}

{{- define "gpulens.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "gpulens.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "gpulens.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* The sources the agent runs. */}}
{{- define "gpulens.sources" -}}
{{- $sources := .Values.sources }}
{{- range .Values.scrape.targets }}
{{- if not (or (hasPrefix "http://" .) (hasPrefix "https://" .)) }}
{{- fail (printf "scrape.targets: %q is not an http:// or https:// URL" .) }}
{{- end }}
{{- end }}
{{- if and .Values.scrape.targets (not (has "scrape" $sources)) }}
{{- $sources = append $sources "scrape" }}
{{- end }}
{{- if has "sim" $sources }}
{{- fail "sources: sim serves made-up data; the chart runs on GPU nodes (nvml, host, kubelet)" }}
{{- end }}
{{- join "," (required "sources: at least one source is required" $sources) }}
{{- end }}

{{/* The agent's config file (values config, plus the files the chart mounts); empty: none. */}}
{{- define "gpulens.configFile" -}}
{{- $cfg := deepCopy .Values.config }}
{{- if .Values.push.tokenSecret.name }}
{{- $push := deepCopy (default (dict) (get $cfg "push")) }}
{{- $_ := set $push "token_file" (printf "/etc/gpulens/push/%s" .Values.push.tokenSecret.key) }}
{{- $_ := set $cfg "push" $push }}
{{- end }}
{{- if $cfg }}
{{- toYaml $cfg }}
{{- end }}
{{- end }}

{{/* The agent's arguments (the image's entrypoint is `gpulens serve`), one per line, as a YAML list. */}}
{{- define "gpulens.args" -}}
- --listen=0.0.0.0:{{ .Values.port }}
- --source={{ include "gpulens.sources" . }}
- --interval={{ .Values.interval }}
- --proc-root=/host/proc
- --sys-root=/host/sys
- --log-level={{ .Values.logLevel }}
- --log-format={{ .Values.logFormat }}
{{- if include "gpulens.configFile" . }}
- --config=/etc/gpulens/config/gpulens.yaml
{{- end }}
{{- if .Values.dcgmNames }}
- --dcgm-names
{{- end }}
{{- with .Values.dcgmHostnameLabel }}
- --dcgm-hostname-label={{ . }}
{{- end }}
{{- if .Values.push.enabled }}
- --push
{{- end }}
{{- with .Values.remoteWrite.url }}
- --remote-write={{ . }}
{{- end }}
{{- range .Values.scrape.targets }}
- --scrape={{ . }}
{{- end }}
{{- if .Values.kubeOwnerLabels.enabled }}
- --kube-owner-labels
{{- end }}
{{- if .Values.webConfig.existingSecret }}
- --web-config-file=/etc/gpulens/web/{{ .Values.webConfig.key }}
{{- end }}
{{- range .Values.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end }}
