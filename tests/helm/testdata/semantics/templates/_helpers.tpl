{{- define "semantics.name" -}}
{{ .Chart.Name }}-{{ .Values.keep }}
{{- end }}
