{{/* Names and labels shared by every template. */}}
{{- define "tickstack.fullname" -}}
{{- if contains "tickstack" .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-tickstack" .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- /* Every object the release installs: the uninstall guard refuses deleting what a restore needs while
a LatencyProfile or LatencyNodeState exists (uninstall-guard.yaml). */}}
{{- define "tickstack.labels" -}}
{{ include "tickstack.commonLabels" . }}
tickstack.io/uninstall-guard: protected
{{- end -}}

{{- define "tickstack.commonLabels" -}}
app.kubernetes.io/name: tickstack
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "tickstack.selector" -}}
app.kubernetes.io/name: tickstack
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- /* An image reference: imageRegistry/<image>, then @<digest> when the component's imageDigest is set
(the tag is then left out: the digest alone names the image), else :<imageTag or appVersion>. */ -}}
{{- define "tickstack.image" -}}
{{- $name := .image -}}
{{- if .root.Values.imageRegistry -}}
{{- $name = printf "%s/%s" (trimSuffix "/" .root.Values.imageRegistry) .image -}}
{{- end -}}
{{- if .digest -}}
{{ printf "%s@%s" $name .digest }}
{{- else -}}
{{ printf "%s:%s" $name (.root.Values.imageTag | default .root.Chart.AppVersion) }}
{{- end -}}
{{- end -}}

{{- define "tickstack.webhookService" -}}
{{ include "tickstack.fullname" . }}-webhook
{{- end -}}

{{- define "tickstack.certSecret" -}}
{{ include "tickstack.fullname" . }}-webhook-cert
{{- end -}}

{{- /* A duration of one number and one unit (s, m, h or d; values.schema.json checks it) in seconds, for
the PrometheusRule's expressions, which compare seconds. */}}
{{- define "tickstack.seconds" -}}
{{- $d := toString . -}}
{{- if not (regexMatch "^[0-9]+(s|m|h|d)$" $d) -}}
{{- fail (printf "%q is not a duration of one number and s, m, h or d" $d) -}}
{{- end -}}
{{- $n := regexFind "^[0-9]+" $d -}}
{{- $unit := trimPrefix $n $d -}}
{{- mul (int64 $n) (get (dict "s" 1 "m" 60 "h" 3600 "d" 86400) $unit) -}}
{{- end -}}

{{- /* The manager pods' affinity: manager.affinity, plus the anti-affinity of manager.podAntiAffinity
(by hostname, between the release's manager pods) unless manager.affinity has its own. */}}
{{- define "tickstack.managerAffinity" -}}
{{- $aff := deepCopy (.Values.manager.affinity | default dict) -}}
{{- $mode := .Values.manager.podAntiAffinity -}}
{{- if and (ne $mode "none") (not (hasKey $aff "podAntiAffinity")) -}}
{{- $labels := include "tickstack.selector" . | fromYaml -}}
{{- $_ := set $labels "app.kubernetes.io/component" "manager" -}}
{{- $term := dict "topologyKey" "kubernetes.io/hostname" "labelSelector" (dict "matchLabels" $labels) -}}
{{- if eq $mode "hard" -}}
{{- $_ := set $aff "podAntiAffinity" (dict "requiredDuringSchedulingIgnoredDuringExecution" (list $term)) -}}
{{- else -}}
{{- $_ := set $aff "podAntiAffinity" (dict "preferredDuringSchedulingIgnoredDuringExecution" (list (dict "weight" 100 "podAffinityTerm" $term))) -}}
{{- end -}}
{{- end -}}
{{- if $aff }}{{ toYaml $aff }}{{ end -}}
{{- end -}}
