{{/*
Names and labels, as `helm create` makes them.
*/}}
{{- define "otel-bridge.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "otel-bridge.fullname" -}}
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

{{- define "otel-bridge.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "otel-bridge.selectorLabels" -}}
app.kubernetes.io/name: {{ include "otel-bridge.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "otel-bridge.labels" -}}
helm.sh/chart: {{ include "otel-bridge.chart" . }}
{{ include "otel-bridge.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: otel-bridge
{{- end }}

{{/*
The labels of every pod that runs a bridge of this release, the DaemonSet's or one with the
otel-bridge.sidecar container: the Service selects them, and the scrape job of the
ServiceMonitor and PodMonitor is the value of otel-bridge/job ("otel-bridge", which
deploy/prometheus/alerts.yml expects: up{job="otel-bridge"}). Add them to the pod template
that includes otel-bridge.sidecar.
*/}}
{{- define "otel-bridge.sidecarPodLabels" -}}
otel-bridge/metrics: {{ include "otel-bridge.fullname" . }}
otel-bridge/job: otel-bridge
{{- end }}

{{- define "otel-bridge.configName" -}}
{{ include "otel-bridge.fullname" . }}
{{- end }}

{{- define "otel-bridge.secretName" -}}
{{- if .Values.otlp.existingSecret }}
{{- .Values.otlp.existingSecret }}
{{- else }}
{{- include "otel-bridge.fullname" . }}-otlp
{{- end }}
{{- end }}

{{- define "otel-bridge.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/*
The grace period: what the bridge takes to deliver its queue at SIGTERM (export-timeout)
and some room.
*/}}
{{- define "otel-bridge.terminationGracePeriodSeconds" -}}
{{- add (int (ceil (index .Values.config "export-timeout" | default 30))) .Values.terminationGraceExtraSeconds }}
{{- end }}

{{/*
otel-bridge.toml: run's options. The keys the chart owns (where the logs and checkpoints are
mounted, where the probes ask) first, then .Values.config, each value written as TOML (a
JSON string, number, boolean or array of strings is TOML too).
*/}}
{{- define "otel-bridge.configFile" -}}
# otel-bridge run --config /etc/otel-bridge/otel-bridge.toml: every key is a long flag of
# `otel-bridge run` without its dashes (docs/configuration.md). Made by the Helm chart from
# its values (config); the OTLP endpoint and headers are in the Secret, never here.
session-state = ["/copilot/session-state"]
state-dir = "/var/lib/otel-bridge"
prometheus-host = "0.0.0.0"
prometheus-port = {{ .Values.metricsPort }}
{{- range $key, $value := .Values.config }}
{{ $key }} = {{ toJson $value }}
{{- end }}
{{- end }}

{{- define "otel-bridge.configChecksum" -}}
{{- include "otel-bridge.configFile" . | sha256sum }}
{{- end }}

{{/*
The bridge container's body (everything but its name and restartPolicy): the DaemonSet's
container and the sidecar share it.
*/}}
{{- define "otel-bridge.containerBody" -}}
image: {{ include "otel-bridge.image" . }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
# the image's ENTRYPOINT is otel-bridge; run's options are in the ConfigMap
args: [run, --config, /etc/otel-bridge/otel-bridge.toml]
env:
  # the OTLP endpoint and headers (which may hold a token) from a Secret, each optional
  - name: OTEL_EXPORTER_OTLP_ENDPOINT
    valueFrom:
      secretKeyRef:
        name: {{ include "otel-bridge.secretName" . }}
        key: endpoint
        optional: true
  - name: OTEL_EXPORTER_OTLP_HEADERS
    valueFrom:
      secretKeyRef:
        name: {{ include "otel-bridge.secretName" . }}
        key: headers
        optional: true
  - name: K8S_NODE_NAME
    valueFrom:
      fieldRef:
        fieldPath: spec.nodeName
  - name: K8S_POD_NAME
    valueFrom:
      fieldRef:
        fieldPath: metadata.name
  - name: K8S_NAMESPACE_NAME
    valueFrom:
      fieldRef:
        fieldPath: metadata.namespace
  # the node's name on every span and metric (their resource)
  - name: OTEL_RESOURCE_ATTRIBUTES
    value: {{ include "otel-bridge.resourceAttributes" . | quote }}
  {{- with .Values.extraEnv }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
ports:
  - name: metrics
    containerPort: {{ .Values.metricsPort }}
    protocol: TCP
{{- with .Values.livenessProbe }}
livenessProbe:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.readinessProbe }}
readinessProbe:
  {{- toYaml . | nindent 2 }}
{{- end }}
resources:
  {{- toYaml .Values.resources | nindent 2 }}
securityContext:
  {{- toYaml .Values.securityContext | nindent 2 }}
{{- end }}

{{- define "otel-bridge.resourceAttributes" -}}
{{- $pairs := list "k8s.node.name=$(K8S_NODE_NAME)" "k8s.pod.name=$(K8S_POD_NAME)" "k8s.namespace.name=$(K8S_NAMESPACE_NAME)" }}
{{- range $key, $value := .Values.resourceAttributes }}
{{- $pairs = append $pairs (printf "%s=%s" $key (toString $value)) }}
{{- end }}
{{- join "," $pairs }}
{{- end }}

{{/*
otel-bridge.sidecar: the bridge as a native sidecar (Kubernetes 1.29+): an init container with
restartPolicy: Always, started before the pod's containers and stopped after them, so that
the agent's last events are read before the bridge gets SIGTERM. Include it under
initContainers of an agent's pod with this chart's context:

    initContainers:
      {{- include "otel-bridge.sidecar" . | nindent 8 }}
    volumes:
      {{- include "otel-bridge.sidecarVolumes" . | nindent 8 }}

It mounts the pod's volume sidecar.copilotHomeVolume (the agent's COPILOT_HOME) read-only at
/copilot, and the volumes of otel-bridge.sidecarVolumes: the ConfigMap, an emptyDir for the
checkpoints (they survive a restart of the container, not of the pod) and one for /tmp. Give
the pod the labels of otel-bridge.sidecarPodLabels, the securityContext runAsUser of the agent
(the CLI makes its session directories 0700), and a terminationGracePeriodSeconds of at least
otel-bridge.terminationGracePeriodSeconds.
*/}}
{{- define "otel-bridge.sidecar" -}}
- name: otel-bridge
  restartPolicy: Always
  {{- include "otel-bridge.containerBody" . | nindent 2 }}
  volumeMounts:
    - name: {{ .Values.sidecar.copilotHomeVolume }}
      mountPath: /copilot
      readOnly: true
    - name: otel-bridge-state
      mountPath: /var/lib/otel-bridge
    - name: otel-bridge-tmp
      mountPath: /tmp
    - name: otel-bridge-config
      mountPath: /etc/otel-bridge
      readOnly: true
{{- end }}

{{- define "otel-bridge.sidecarVolumes" -}}
- name: otel-bridge-state
  emptyDir: {}
- name: otel-bridge-tmp
  emptyDir:
    sizeLimit: 16Mi
- name: otel-bridge-config
  configMap:
    name: {{ include "otel-bridge.configName" . }}
{{- end }}

{{/*
The pod spec's scheduling values, shared by the DaemonSet and the example Deployment.
*/}}
{{- define "otel-bridge.scheduling" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
