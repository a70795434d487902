{{- define "kollect.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "kollect.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "kollect.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "kollect.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "kollect.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kollect.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller-manager
{{- end -}}

{{- define "kollect.labels" -}}
{{ include "kollect.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "kollect.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (printf "%s-controller-manager" (include "kollect.fullname" .)) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "kollect.image" -}}
{{- printf "%s:%s" .Values.image.repository (default (printf "v%s" .Chart.AppVersion) .Values.image.tag) -}}
{{- end -}}

{{/* The namespaces the operator's Roles live in, in tenant mode. */}}
{{- define "kollect.tenantNamespaces" -}}
{{- if .Values.watchNamespaces -}}
{{- toJson .Values.watchNamespaces -}}
{{- else -}}
{{- toJson (list .Release.Namespace) -}}
{{- end -}}
{{- end -}}

{{- define "kollect.secretNamespaces" -}}
{{- if .Values.rbac.secrets.namespaces -}}
{{- toJson .Values.rbac.secrets.namespaces -}}
{{- else -}}
{{- toJson (list .Release.Namespace) -}}
{{- end -}}
{{- end -}}

{{- define "kollect.resources" -}}
{{- if eq .Values.resourcesProfile "large" -}}
{{- toYaml .Values.largeCluster.resources -}}
{{- else -}}
{{- toYaml .Values.resources -}}
{{- end -}}
{{- end -}}

{{/* Webhook certificates come from cert-manager when it is installed (and
allowed); otherwise the operator issues and renews its own. */}}
{{- define "kollect.webhookCertManager" -}}
{{- if and .Values.webhooks.certManager.create (.Capabilities.APIVersions.Has "cert-manager.io/v1") -}}true{{- end -}}
{{- end -}}

{{- define "kollect.webhookService" -}}
{{- printf "%s-webhook-service" (include "kollect.fullname" .) -}}
{{- end -}}

{{- define "kollect.webhookConfiguration" -}}
{{- printf "%s-validating-webhook-configuration" (include "kollect.fullname" .) -}}
{{- end -}}

{{/*
The metrics port and address: upstream's metrics.bindAddress ([host]:port),
when set, wins over metrics.port, so an upstream values file keeps its port.
*/}}
{{- define "kollect.metricsPort" -}}
{{- if .Values.metrics.bindAddress -}}
{{- splitList ":" .Values.metrics.bindAddress | last -}}
{{- else -}}
{{- .Values.metrics.port -}}
{{- end -}}
{{- end -}}

{{- define "kollect.metricsBindAddress" -}}
{{- .Values.metrics.bindAddress | default (printf ":%v" .Values.metrics.port) -}}
{{- end -}}
