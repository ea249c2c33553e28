"""Manifests the end-to-end tests apply: one object of every served kind."""

EVERY_KIND = """\
apiVersion: v1
kind: Namespace
metadata:
  name: tour
  labels: {purpose: e2e}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: tour}
data: {MODE: fast, GREETING: hello}
---
apiVersion: v1
kind: Secret
metadata: {name: credentials, namespace: tour}
stringData: {PASSWORD: s3cret}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: robot, namespace: tour}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: tour}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: web, namespace: tour}
subsets:
- addresses: [{ip: 10.244.0.5}]
  ports: [{port: 8080}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: web-1
  namespace: tour
  labels: {kubernetes.io/service-name: web}
addressType: IPv4
endpoints: [{addresses: [10.244.0.5]}]
ports: [{port: 8080, protocol: TCP}]
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: batch-high}
value: 1000
description: batch work that may preempt
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: tour-class}
provisioner: example.com/tour
reclaimPolicy: Retain
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: tour-volume}
# Read-only many: the claim below (read-write once) never binds to it, so both stay put.
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadOnlyMany]
  storageClassName: tour-class
  hostPath: {path: /srv/tour-volume}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: tour-data, namespace: tour}
spec:
  storageClassName: tour-class
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 100Mi}}
---
apiVersion: v1
kind: Node
metadata:
  name: static-node
  labels: {kubernetes.io/hostname: static-node}
# No agent runs this node: it carries the taint upstream's admission gives every new Node until
# its kubelet reports Ready (the node lifecycle controller then marks it unreachable).
spec:
  taints: [{key: node.kubernetes.io/not-ready, effect: NoSchedule}]
status:
  capacity: {cpu: "2", memory: 4Gi, pods: "110"}
  allocatable: {cpu: "2", memory: 4Gi, pods: "110"}
---
apiVersion: v1
kind: Pod
metadata:
  name: worker
  namespace: tour
  labels: {app: worker, tier: batch}
spec:
  priorityClassName: batch-high
  # These tests are about the API: keep the pod unscheduled (no node has this label).
  nodeSelector: {inplace.dev/e2e: api-only}
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "sleep 3600"]
    resources:
      requests: {cpu: 250m, memory: 64Mi}
      limits: {cpu: 500m, memory: 128Mi}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: tour}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      nodeSelector: {inplace.dev/e2e: api-only}
      containers:
      - name: web
        image: nginx
        command: ["sleep", "3600"]
        resources: {requests: {cpu: 100m, memory: 32Mi}}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: cache, namespace: tour}
spec:
  replicas: 1
  selector: {matchLabels: {app: cache}}
  template:
    metadata: {labels: {app: cache}}
    spec:
      nodeSelector: {inplace.dev/e2e: api-only}
      containers:
      - {name: cache, image: redis, command: ["sleep", "3600"]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: sequence, namespace: tour}
spec:
  template:
    spec:
      restartPolicy: Never
      nodeSelector: {inplace.dev/e2e: api-only}
      containers:
      - name: align
        image: genomics
        command: ["sh", "-c", "sleep 10"]
        resources: {requests: {cpu: 500m, memory: 256Mi}, limits: {cpu: "1", memory: 512Mi}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: ledger, namespace: tour}
spec:
  serviceName: web
  replicas: 1
  selector: {matchLabels: {app: ledger}}
  template:
    metadata: {labels: {app: ledger}}
    spec:
      nodeSelector: {inplace.dev/e2e: api-only}
      containers:
      - {name: ledger, image: busybox, command: ["sleep", "3600"]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: tour}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      # No node has this label: the DaemonSet runs nowhere.
      nodeSelector: {inplace.dev/e2e: api-only}
      containers:
      - {name: agent, image: busybox, command: ["sleep", "3600"]}
---
apiVersion: apps/v1
kind: ControllerRevision
metadata: {name: ledger-manual, namespace: tour}
revision: 1
data:
  spec:
    template:
      $patch: replace
      metadata: {labels: {app: ledger}}
      spec:
        containers:
        - {name: ledger, image: busybox, command: ["sleep", "3600"]}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, namespace: tour}
spec:
  schedule: "0 3 * * *"
  timeZone: Europe/Paris
  # Suspended: these tests are about the API, no Job is ever made.
  suspend: true
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          nodeSelector: {inplace.dev/e2e: api-only}
          containers:
          - {name: report, image: busybox, command: ["true"]}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web-pdb, namespace: tour}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: holder, namespace: tour}
spec: {holderIdentity: e2e, leaseDurationSeconds: 40}
---
apiVersion: autoscaling.k8s.io/v1
kind: VerticalPodAutoscaler
metadata: {name: sequence-vpa, namespace: tour}
spec:
  targetRef: {apiVersion: batch/v1, kind: Job, name: sequence}
  updatePolicy: {updateMode: InPlaceOrRecreate}
  resourcePolicy:
    containerPolicies:
    - containerName: "*"
      minAllowed: {cpu: 100m, memory: 64Mi}
      maxAllowed: {cpu: "2", memory: 2Gi}
---
apiVersion: autoscaling.k8s.io/v1
kind: VerticalPodAutoscalerCheckpoint
metadata: {name: sequence-vpa-sequence, namespace: tour}
spec: {vpaObjectName: sequence-vpa, containerName: sequence}
status:
  version: v3
  cpuHistogram:
    referenceTimestamp: "2026-01-05T00:00:00Z"
    bucketWeights: {"1": 10000, "2": 2500}
    totalWeight: 5
  firstSampleStart: "2026-01-04T00:00:00Z"
  lastSampleStart: "2026-01-05T00:00:00Z"
  totalSamplesCount: 1440
---
apiVersion: v1
kind: Event
metadata: {name: worker.e2e, namespace: tour}
involvedObject: {kind: Pod, namespace: tour, name: worker, apiVersion: v1}
reason: Testing
message: an event written by the end-to-end test
type: Normal
source: {component: e2e}
firstTimestamp: "2026-01-01T00:00:00Z"
lastTimestamp: "2026-01-01T00:00:00Z"
count: 1
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: tour-reader}
rules:
- apiGroups: [""]
  resources: [pods, pods/log]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: tour-readers}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: tour-reader}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: tour-auditors}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: lease-holder, namespace: tour}
rules:
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  resourceNames: [holder]
  verbs: [get, update]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: lease-holders, namespace: tour}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: lease-holder}
subjects:
- {kind: ServiceAccount, name: holder, namespace: tour}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: tour-mutating}
webhooks:
- name: mutating.tour.example.com
  clientConfig: {url: "https://127.0.0.1:1/never"}
  rules:
  - {operations: [CREATE], apiGroups: [tour.example.com], apiVersions: [v1], resources: [nothings]}
  failurePolicy: Ignore
  sideEffects: None
  admissionReviewVersions: [v1]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: tour-validating}
webhooks:
- name: validating.tour.example.com
  clientConfig: {url: "https://127.0.0.1:1/never"}
  rules:
  - {operations: [CREATE], apiGroups: [tour.example.com], apiVersions: [v1], resources: [nothings]}
  failurePolicy: Ignore
  sideEffects: None
  admissionReviewVersions: [v1]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: tour-policy}
spec:
  matchConstraints:
    resourceRules:
    - operations: [CREATE]
      apiGroups: [tour.example.com]
      apiVersions: [v1]
      resources: [nothings]
  validations:
  - expression: "true"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: tour-policy}
spec: {policyName: tour-policy, validationActions: [Audit]}
"""
