package chart_test

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/networkio/webchecker/e2e/chart"
	"github.com/networkio/webchecker/e2e/framework"
)

// chartAllFeatures are values that switch on every optional feature that
// needs RBAC rules. With them the chart's rules must equal the ones
// controller-gen generates into config/rbac/role.yaml. A new switch that
// adds or removes rules belongs here.
var chartAllFeatures = map[string]any{
	"metrics": map[string]any{"enabled": true, "secure": true},
	"secrets": map[string]any{"access": true},
	"watch":   map[string]any{"namespaceSelector": "team=platform"},
	"egress":  map[string]any{"denyClusterNetworks": true},
}

// TestChartLintStrict lints the chart as `helm lint --strict` does, with
// the default values and with every feature switched on.
func TestChartLintStrict(t *testing.T) {
	rulesAndDashboards := map[string]any{
		"metrics":    map[string]any{"prometheusRule": map[string]any{"enabled": true}, "serviceMonitor": map[string]any{"enabled": true}},
		"dashboards": map[string]any{"enabled": true, "folder": "WebChecker"},
	}
	proxyFromSecret := map[string]any{"proxy": map[string]any{"url": "http://egress-proxy.internal:3128", "existingSecret": "egress-proxy", "noProxy": []any{".svc.cluster.local"}}}
	for name, values := range map[string]map[string]any{"defaults": nil, "every feature": chartAllFeatures, "rules and dashboards": rulesAndDashboards, "proxy from a Secret": proxyFromSecret} {
		t.Run(name, func(t *testing.T) {
			messages, err := chart.Lint(chartNamespace, values)
			assert.NoError(t, err, "messages: %v", messages)
		})
	}
}

func TestChartDefaults(t *testing.T) {
	r := renderChart(t, nil)
	assert.Equal(t, []string{
		"ClusterRole/webchecker-edit",
		"ClusterRole/webchecker-manager",
		"ClusterRole/webchecker-metrics-reader",
		"ClusterRole/webchecker-view",
		"ClusterRoleBinding/webchecker-manager",
		"CustomResourceDefinition/webcheckermaintenances.test.network.io",
		"CustomResourceDefinition/webcheckers.test.network.io",
		"Deployment/webchecker",
		"FlowSchema/webchecker-leases",
		"PodDisruptionBudget/webchecker",
		"Role/webchecker-cluster-networks",
		"Role/webchecker-manager",
		"RoleBinding/webchecker-cluster-networks",
		"RoleBinding/webchecker-manager",
		"Service/webchecker-metrics",
		"ServiceAccount/webchecker",
	}, r.kinds())

	deploy := renderedAs[appsv1.Deployment](t, r, "Deployment", "webchecker")
	assert.Equal(t, int32(3), *deploy.Spec.Replicas)
	pod := deploy.Spec.Template.Spec
	selector := deploy.Spec.Selector.MatchLabels
	assert.Equal(t, map[string]string{"app.kubernetes.io/name": "webchecker", "app.kubernetes.io/instance": chartRelease}, selector)
	assert.Subset(t, deploy.Spec.Template.Labels, selector)
	assert.Equal(t, "webchecker", pod.ServiceAccountName)
	assert.Equal(t, int64(30), *pod.TerminationGracePeriodSeconds)

	c := pod.Containers[0]
	assert.Equal(t, "webchecker:0.1.0", c.Image, "the image tag follows appVersion")
	assert.Equal(t, []string{
		"--shard-id=$(POD_NAME)",
		"--lease-namespace=webchecker",
		"--ring-name=webchecker",
		"--lease-duration=10s",
		"--lease-renew-interval=2s",
		"--handover-lead=5s",
		"--virtual-nodes=100",
		"--secret-access=true",
		"--deny-cluster-networks=true",
		"--metrics-bind-address=:8443",
		"--metrics-secure=true",
		"--health-probe-bind-address=:8081",
		"--zap-log-level=info",
	}, c.Args)
	require.Len(t, c.Env, 4)
	assert.Equal(t, "GOMEMLIMIT", c.Env[3].Name)
	assert.Equal(t, "limits.memory", c.Env[3].ValueFrom.ResourceFieldRef.Resource, "the Go heap limit follows the memory limit")
	for i, want := range map[int][2]string{
		0: {"POD_NAME", "metadata.name"},
		1: {"POD_NAMESPACE", "metadata.namespace"},
		2: {"POD_ZONE", "metadata.labels['topology.kubernetes.io/zone']"},
	} {
		assert.Equal(t, want[0], c.Env[i].Name)
		require.NotNil(t, c.Env[i].ValueFrom)
		assert.Equal(t, want[1], c.Env[i].ValueFrom.FieldRef.FieldPath, "%s comes from the downward API", want[0])
	}
	assert.Equal(t, []corev1.ContainerPort{
		{Name: "metrics", ContainerPort: 8443, Protocol: corev1.ProtocolTCP},
		{Name: "health", ContainerPort: 8081, Protocol: corev1.ProtocolTCP},
	}, c.Ports)
	assert.Equal(t, &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("health")}, c.LivenessProbe.HTTPGet)
	assert.Equal(t, &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("health")}, c.ReadinessProbe.HTTPGet)
	assert.NotEmpty(t, c.Resources.Requests)
	assert.NotEmpty(t, c.Resources.Limits)

	// The restricted Pod Security Standard.
	sc := c.SecurityContext
	assert.False(t, *sc.AllowPrivilegeEscalation)
	assert.True(t, *sc.ReadOnlyRootFilesystem)
	assert.True(t, *sc.RunAsNonRoot)
	assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, sc.SeccompProfile.Type)
	assert.True(t, *pod.SecurityContext.RunAsNonRoot)
	assert.Equal(t, int64(65532), *pod.SecurityContext.RunAsUser)
	assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, pod.SecurityContext.SeccompProfile.Type)

	// Across zones first (quorum probing needs replicas in several), then
	// nodes; neither blocks scheduling.
	require.Len(t, pod.TopologySpreadConstraints, 2)
	for i, key := range []string{"topology.kubernetes.io/zone", "kubernetes.io/hostname"} {
		spread := pod.TopologySpreadConstraints[i]
		assert.Equal(t, key, spread.TopologyKey)
		assert.Equal(t, corev1.ScheduleAnyway, spread.WhenUnsatisfiable)
		assert.Equal(t, selector, spread.LabelSelector.MatchLabels)
	}

	pdb := renderedAs[policyv1.PodDisruptionBudget](t, r, "PodDisruptionBudget", "webchecker")
	assert.Equal(t, intstr.FromInt32(1), *pdb.Spec.MaxUnavailable)
	assert.Equal(t, selector, pdb.Spec.Selector.MatchLabels)

	svc := renderedAs[corev1.Service](t, r, "Service", "webchecker-metrics")
	assert.Equal(t, selector, svc.Spec.Selector)
	assert.Equal(t, []corev1.ServicePort{{Name: "https-metrics", Port: 8443, TargetPort: intstr.FromString("metrics"), Protocol: corev1.ProtocolTCP}}, svc.Spec.Ports)

	binding := renderedAs[rbacv1.ClusterRoleBinding](t, r, "ClusterRoleBinding", "webchecker-manager")
	assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "webchecker", Namespace: chartNamespace}}, binding.Subjects)
	assert.Equal(t, "webchecker-manager", binding.RoleRef.Name)
	role := renderedAs[rbacv1.Role](t, r, "Role", "webchecker-manager")
	assert.Equal(t, chartNamespace, role.Namespace, "Leases only in the release namespace")
	roleBinding := renderedAs[rbacv1.RoleBinding](t, r, "RoleBinding", "webchecker-manager")
	assert.Equal(t, chartNamespace, roleBinding.Namespace)
	assert.Equal(t, binding.Subjects, roleBinding.Subjects)
	reader := renderedAs[rbacv1.ClusterRole](t, r, "ClusterRole", "webchecker-metrics-reader")
	assert.Equal(t, []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}, reader.Rules)
	rules := ruleSet(renderedAs[rbacv1.ClusterRole](t, r, "ClusterRole", "webchecker-manager").Rules)
	assert.Subset(t, rules, []string{"/secrets:get", "/secrets:list", "/secrets:watch"}, "Secret access is on by default, read-only")
	assert.NotContains(t, rules, "/secrets:create")
	assert.Subset(t, rules, []string{"/namespaces:get", "/namespaces:list", "/namespaces:watch"}, "the egress allowance annotation is read from the Namespaces")
	assert.NotContains(t, rules, "/namespaces:update")
	assert.NotContains(t, rules, "/namespaces:patch", "the manager can never give itself an egress allowance")
	assert.Subset(t, rules, []string{"/nodes:list", "/nodes:watch", "networking.k8s.io/servicecidrs:list", "networking.k8s.io/servicecidrs:watch"},
		"the cluster's networks are denied by default")
	assert.NotContains(t, rules, "discovery.k8s.io/endpointslices:list", "EndpointSlices in namespace default only")
	networks := renderedAs[rbacv1.Role](t, r, "Role", "webchecker-cluster-networks")
	assert.Equal(t, "default", networks.Namespace, "the API server's EndpointSlices are in default")
	assert.Equal(t, []string{"discovery.k8s.io/endpointslices:list", "discovery.k8s.io/endpointslices:watch"}, ruleSet(networks.Rules))
	networksBinding := renderedAs[rbacv1.RoleBinding](t, r, "RoleBinding", "webchecker-cluster-networks")
	assert.Equal(t, "default", networksBinding.Namespace)
	assert.Equal(t, binding.Subjects, networksBinding.Subjects)
	assert.Equal(t, "webchecker-cluster-networks", networksBinding.RoleRef.Name)
}

func TestChartValues(t *testing.T) {
	tests := map[string]struct {
		values map[string]any
		check  func(t *testing.T, r rendered)
	}{
		"replicas": {
			values: map[string]any{"replicaCount": 5},
			check: func(t *testing.T, r rendered) {
				assert.Equal(t, int32(5), *renderedAs[appsv1.Deployment](t, r, "Deployment", "webchecker").Spec.Replicas)
			},
		},
		"plain HTTP metrics": {
			values: map[string]any{"metrics": map[string]any{"secure": false}},
			check: func(t *testing.T, r rendered) {
				assert.Contains(t, managerContainer(t, r).Args, "--metrics-secure=false")
				assert.Nil(t, r.find("ClusterRole", "webchecker-metrics-reader"))
				assert.NotContains(t, ruleSet(renderedAs[rbacv1.ClusterRole](t, r, "ClusterRole", "webchecker-manager").Rules),
					"authentication.k8s.io/tokenreviews:create", "plain metrics need no TokenReviews")
				assert.Equal(t, "http-metrics", renderedAs[corev1.Service](t, r, "Service", "webchecker-metrics").Spec.Ports[0].Name)
			},
		},
		"metrics off": {
			values: map[string]any{"metrics": map[string]any{"enabled": false}},
			check: func(t *testing.T, r rendered) {
				c := managerContainer(t, r)
				assert.Contains(t, c.Args, "--metrics-bind-address=0")
				assert.NotContains(t, c.Args, "--metrics-secure=true")
				assert.Len(t, c.Ports, 1)
				assert.Nil(t, r.find("Service", "webchecker-metrics"))
			},
		},
		"ServiceMonitor on a secure endpoint": {
			values: map[string]any{"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "prom"}}}},
			check: func(t *testing.T, r rendered) {
				sm := r.find("ServiceMonitor", "webchecker")
				require.NotNil(t, sm)
				assert.Equal(t, "monitoring.coreos.com/v1", sm.GetAPIVersion())
				assert.Equal(t, "prom", sm.GetLabels()["release"])
				svc := renderedAs[corev1.Service](t, r, "Service", "webchecker-metrics")
				selector, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
				assert.Subset(t, svc.Labels, selector, "the ServiceMonitor selects the metrics Service")
				endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
				require.Len(t, endpoints, 1)
				endpoint := endpoints[0].(map[string]any)
				assert.Equal(t, svc.Spec.Ports[0].Name, endpoint["port"])
				assert.Equal(t, "https", endpoint["scheme"])
				assert.Equal(t, "/var/run/secrets/kubernetes.io/serviceaccount/token", endpoint["bearerTokenFile"])
				assert.Equal(t, map[string]any{"insecureSkipVerify": true}, endpoint["tlsConfig"])
				assert.Equal(t, true, endpoint["honorLabels"], "the checkers' namespace and name labels survive")
			},
		},
		"ServiceMonitor with a token Secret": {
			values: map[string]any{"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true, "authorization": map[string]any{
				"type": "Bearer", "credentials": map[string]any{"name": "prometheus-token", "key": "token"},
			}}}},
			check: func(t *testing.T, r rendered) {
				endpoints, _, _ := unstructured.NestedSlice(r.find("ServiceMonitor", "webchecker").Object, "spec", "endpoints")
				endpoint := endpoints[0].(map[string]any)
				assert.Equal(t, map[string]any{"type": "Bearer", "credentials": map[string]any{"name": "prometheus-token", "key": "token"}}, endpoint["authorization"])
				assert.NotContains(t, endpoint, "bearerTokenFile")
			},
		},
		"ServiceMonitor on a plain endpoint": {
			values: map[string]any{"metrics": map[string]any{"secure": false, "serviceMonitor": map[string]any{"enabled": true}}},
			check: func(t *testing.T, r rendered) {
				endpoints, _, _ := unstructured.NestedSlice(r.find("ServiceMonitor", "webchecker").Object, "spec", "endpoints")
				endpoint := endpoints[0].(map[string]any)
				assert.Equal(t, "http", endpoint["scheme"])
				assert.Equal(t, "http-metrics", endpoint["port"])
				assert.NotContains(t, endpoint, "bearerTokenFile")
			},
		},
		"PrometheusRule": {
			values: map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true, "webCheckerDown": map[string]any{"for": "10m"},
				"certificateExpiring": map[string]any{"days": 7, "severity": "info"}}}},
			check: func(t *testing.T, r rendered) {
				rule := r.find("PrometheusRule", "webchecker")
				require.NotNil(t, rule)
				spec := rule.Object["spec"].(map[string]any)
				var names []string
				for _, g := range ruleGroups(spec) {
					names = append(names, g["name"].(string))
				}
				assert.Equal(t, []string{"webchecker", "webchecker-availability", "webchecker-slo", "webchecker-operator"}, names, "every group is on by default")
				alert := ruleGroups(spec)[0]["rules"].([]any)[0].(map[string]any)
				assert.Equal(t, "WebCheckerDown", alert["alert"])
				assert.Equal(t, "(max by (namespace, name) (max_over_time(webchecker_ready[1m])) == 0) unless on (namespace, name) ((max by (namespace, name) (max_over_time(webchecker_maintenance[1m])) == 1) or (max by (namespace, name) (max_over_time(webchecker_dependency_down[1m])) == 1))", alert["expr"])
				assert.Equal(t, "10m", alert["for"])
				assert.Equal(t, map[string]any{"severity": "warning"}, alert["labels"])
				cert := ruleGroups(spec)[0]["rules"].([]any)[1].(map[string]any)
				assert.Equal(t, "WebCheckerCertificateExpiring", cert["alert"])
				assert.Equal(t, "min by (namespace, name) (max_over_time(webchecker_probe_ssl_earliest_cert_expiry[1m])) - time() < 604800", cert["expr"])
				assert.Equal(t, "15m", cert["for"])
				assert.Equal(t, map[string]any{"severity": "info"}, cert["labels"])
				for _, alert := range []string{"WebCheckerDown", "WebCheckerCertificateExpiring", "WebCheckerClientCertificateExpiring", "WebCheckerErrorBudgetBurning", "WebCheckerErrorBudgetBurningSlowly",
					"WebCheckerSchedulerFallingBehind", "WebCheckerStatusWritesFailing", "WebCheckerRingMembersMissing", "WebCheckerReplicaFenced"} {
					assert.NotEmpty(t, ruleAnnotation(spec, alert, "runbook"), "%s has a runbook", alert)
				}
			},
		},
		"PrometheusRule groups switched off, SLO objective and operator thresholds set": {
			values: map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true,
				"checkerAlerts": map[string]any{"enabled": false},
				"operator":      map[string]any{"enabled": false},
				"slo":           map[string]any{"objective": 0.99, "page": map[string]any{"severity": "page"}},
			}}},
			check: func(t *testing.T, r rendered) {
				spec := r.find("PrometheusRule", "webchecker").Object["spec"].(map[string]any)
				groups := ruleGroups(spec)
				require.Len(t, groups, 2)
				assert.Equal(t, "webchecker-availability", groups[0]["name"])
				assert.Equal(t, "webchecker-slo", groups[1]["name"])
				objective := groups[1]["rules"].([]any)[0].(map[string]any)
				assert.Equal(t, "webchecker:slo_objective", objective["record"])
				assert.Contains(t, objective["expr"], "(0 * max by (namespace, name) (webchecker:probes:rate5m) + 0.99)", "the default objective")
				page := groups[1]["rules"].([]any)[1].(map[string]any)
				assert.Equal(t, "WebCheckerErrorBudgetBurning", page["alert"])
				assert.Contains(t, page["expr"], "(1 - webchecker:probe_availability:ratio_rate1h) > on (namespace, name) group_left () (14.4 * (1 - webchecker:slo_objective))")
				assert.Equal(t, map[string]any{"severity": "page"}, page["labels"])
			},
		},
		"PrometheusRule with additional rules only": {
			values: map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true,
				"checkerAlerts": map[string]any{"enabled": false}, "availability": map[string]any{"enabled": false},
				"slo": map[string]any{"enabled": false}, "operator": map[string]any{"enabled": false},
				"additionalRules": []any{map[string]any{"record": "mine", "expr": "vector(1)"}},
			}}},
			check: func(t *testing.T, r rendered) {
				groups := ruleGroups(r.find("PrometheusRule", "webchecker").Object["spec"].(map[string]any))
				require.Len(t, groups, 1)
				assert.Equal(t, []any{map[string]any{"record": "mine", "expr": "vector(1)"}}, groups[0]["rules"])
			},
		},
		"dashboards": {
			values: map[string]any{"dashboards": map[string]any{"enabled": true, "folder": "Monitoring", "labels": map[string]any{"team": "sre"}}},
			check: func(t *testing.T, r rendered) {
				dir, err := chart.Dir()
				require.NoError(t, err)
				for _, name := range []string{"fleet", "checker", "operator"} {
					cm := renderedAs[corev1.ConfigMap](t, r, "ConfigMap", "webchecker-dashboard-"+name)
					assert.Equal(t, chartNamespace, cm.Namespace)
					assert.Equal(t, "1", cm.Labels["grafana_dashboard"], "the label kube-prometheus-stack's sidecar selects")
					assert.Equal(t, "sre", cm.Labels["team"])
					assert.Equal(t, map[string]string{"grafana_folder": "Monitoring"}, cm.Annotations)
					file := "webchecker-" + name + ".json"
					want, err := os.ReadFile(filepath.Join(dir, "files", "dashboards", file))
					require.NoError(t, err)
					assert.JSONEq(t, string(want), cm.Data[file], "the generated dashboard, verbatim")
				}
			},
		},
		"dashboards with another label and namespace": {
			values: map[string]any{"dashboards": map[string]any{"enabled": true, "namespace": "monitoring", "label": "dashboards", "labelValue": "webchecker", "folderAnnotation": "k8s-sidecar-target-directory"}},
			check: func(t *testing.T, r rendered) {
				cm := renderedAs[corev1.ConfigMap](t, r, "ConfigMap", "webchecker-dashboard-fleet")
				assert.Equal(t, "monitoring", cm.Namespace)
				assert.Equal(t, "webchecker", cm.Labels["dashboards"])
				assert.NotContains(t, cm.Labels, "grafana_dashboard")
				assert.Empty(t, cm.Annotations, "no folder: no folder annotation")
			},
		},
		"custom lease settings": {
			values: map[string]any{"sharding": map[string]any{
				"leaseNamespace": "leases", "ringName": "blue", "leaseDuration": "30s", "leaseRenewInterval": "5s", "handOverLead": "2s", "virtualNodes": 200,
			}},
			check: func(t *testing.T, r rendered) {
				args := managerContainer(t, r).Args
				for _, want := range []string{"--lease-namespace=leases", "--ring-name=blue", "--lease-duration=30s", "--lease-renew-interval=5s", "--handover-lead=2s", "--virtual-nodes=200"} {
					assert.Contains(t, args, want)
				}
				assert.Equal(t, "leases", renderedAs[rbacv1.Role](t, r, "Role", "webchecker-manager").Namespace, "the Role follows the Leases")
				binding := renderedAs[rbacv1.RoleBinding](t, r, "RoleBinding", "webchecker-manager")
				assert.Equal(t, "leases", binding.Namespace)
				assert.Equal(t, chartNamespace, binding.Subjects[0].Namespace)
				schema := renderedAs[flowcontrolv1.FlowSchema](t, r, "FlowSchema", "webchecker-leases")
				require.Len(t, schema.Spec.Rules, 1)
				assert.Equal(t, []string{"leases"}, schema.Spec.Rules[0].ResourceRules[0].Namespaces, "the FlowSchema follows the Leases")
				assert.Equal(t, flowcontrolv1.ServiceAccountSubject{Namespace: chartNamespace, Name: "webchecker"}, *schema.Spec.Rules[0].Subjects[0].ServiceAccount)
			},
		},
		"another priority level for the Leases": {
			values: map[string]any{"sharding": map[string]any{"flowSchema": map[string]any{"priorityLevel": "workload-high", "matchingPrecedence": 800}}},
			check: func(t *testing.T, r rendered) {
				schema := renderedAs[flowcontrolv1.FlowSchema](t, r, "FlowSchema", "webchecker-leases")
				assert.Equal(t, "workload-high", schema.Spec.PriorityLevelConfiguration.Name)
				assert.Equal(t, int32(800), schema.Spec.MatchingPrecedence)
			},
		},
		"no FlowSchema": {
			values: map[string]any{"sharding": map[string]any{"flowSchema": map[string]any{"enabled": false}}},
			check: func(t *testing.T, r rendered) {
				assert.NotContains(t, r.kinds(), "FlowSchema/webchecker-leases")
			},
		},
		"probing flags and extra arguments": {
			values: map[string]any{"manager": map[string]any{
				"probeWorkers": 8, "dnsServer": "10.0.0.10:53", "logLevel": "debug", "extraArgs": []any{"--zap-encoder=console"},
				"kubeApiQPS": 50.5, "kubeApiBurst": 120, "reconcileWorkers": 16,
				"reconcileNamespaceShare": 0.5, "statusMessagePeriod": "30s",
			}},
			check: func(t *testing.T, r rendered) {
				args := managerContainer(t, r).Args
				for _, want := range []string{"--probe-workers=8", "--dns-server=10.0.0.10:53", "--zap-log-level=debug",
					"--kube-api-qps=50.5", "--kube-api-burst=120", "--reconcile-workers=16",
					"--reconcile-namespace-share=0.5", "--status-message-period=30s"} {
					assert.Contains(t, args, want)
				}
				assert.Equal(t, "--zap-encoder=console", args[len(args)-1], "extra arguments come last, so they win")
			},
		},
		"no Secret access": {
			values: map[string]any{"secrets": map[string]any{"access": false}},
			check: func(t *testing.T, r rendered) {
				args := managerContainer(t, r).Args
				assert.Contains(t, args, "--secret-access=false")
				assert.NotContains(t, args, "--secret-access=true")
				rules := ruleSet(renderedAs[rbacv1.ClusterRole](t, r, "ClusterRole", "webchecker-manager").Rules)
				for _, rule := range rules {
					assert.NotContains(t, rule, "secrets", "no rule on Secrets without Secret access")
				}
				assert.Contains(t, rules, "test.network.io/webcheckers:watch", "the other rules stay")
			},
		},
		"Secret selector": {
			values: map[string]any{"secrets": map[string]any{"selector": "webchecker.test.network.io/probe=true"}},
			check: func(t *testing.T, r rendered) {
				args := managerContainer(t, r).Args
				assert.Contains(t, args, "--secret-access=true")
				assert.Contains(t, args, "--secret-selector=webchecker.test.network.io/probe=true")
			},
		},
		"namespace scope": {
			values: map[string]any{"watch": map[string]any{"namespaces": []any{"shop", "payments"}, "namespaceSelector": "env in (prod, staging)"}},
			check: func(t *testing.T, r rendered) {
				args := managerContainer(t, r).Args
				assert.Contains(t, args, "--watch-namespaces=shop,payments")
				assert.Contains(t, args, "--namespace-selector=env in (prod, staging)", "a selector with spaces and commas stays one argument")
				assert.Subset(t, ruleSet(renderedAs[rbacv1.ClusterRole](t, r, "ClusterRole", "webchecker-manager").Rules),
					[]string{"/namespaces:get", "/namespaces:list", "/namespaces:watch"}, "a namespace selector reads the namespaces' labels")
			},
		},
		"watched namespaces without a selector": {
			values: map[string]any{"watch": map[string]any{"namespaces": []any{"shop"}}},
			check: func(t *testing.T, r rendered) {
				args := managerContainer(t, r).Args
				assert.Contains(t, args, "--watch-namespaces=shop")
				assert.Empty(t, flagsNamed(args, "--namespace-selector"))
				assert.Contains(t, ruleSet(renderedAs[rbacv1.ClusterRole](t, r, "ClusterRole", "webchecker-manager").Rules), "/namespaces:list",
					"the egress allowance annotation is read without a selector too")
			},
		},
		"no cluster networks": {
			values: map[string]any{"egress": map[string]any{"denyClusterNetworks": false}},
			check: func(t *testing.T, r rendered) {
				assert.Equal(t, []string{"--deny-cluster-networks=false"}, flagsNamed(managerContainer(t, r).Args, "--deny-cluster-networks"))
				rules := ruleSet(renderedAs[rbacv1.ClusterRole](t, r, "ClusterRole", "webchecker-manager").Rules)
				for _, rule := range rules {
					assert.NotRegexp(t, "nodes|servicecidrs|endpointslices", rule)
				}
				assert.Nil(t, r.find("Role", "webchecker-cluster-networks"))
				assert.Nil(t, r.find("RoleBinding", "webchecker-cluster-networks"))
			},
		},
		"Secrets readable only in the watched namespaces": {
			values: map[string]any{"watch": map[string]any{"namespaces": []any{"shop", "payments"}}},
			check: func(t *testing.T, r rendered) {
				for _, rule := range ruleSet(renderedAs[rbacv1.ClusterRole](t, r, "ClusterRole", "webchecker-manager").Rules) {
					assert.NotContains(t, rule, "secrets", "the ClusterRole would read Secrets in every namespace")
				}
				roles, bindings := secretRolesByNamespace(t, r)
				assert.ElementsMatch(t, []string{"shop", "payments"}, slices.Collect(maps.Keys(roles)), "a Role per watched namespace")
				for ns, role := range roles {
					assert.Equal(t, []string{"/secrets:get", "/secrets:list", "/secrets:watch"}, ruleSet(role.Rules), ns)
					binding := bindings[ns]
					require.NotNil(t, binding, "no RoleBinding in %s", ns)
					assert.Equal(t, rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name}, binding.RoleRef, ns)
					assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "webchecker", Namespace: chartNamespace}}, binding.Subjects, ns)
				}
				assert.Len(t, bindings, 2)
			},
		},
		"watched namespaces without Secret access": {
			values: map[string]any{"watch": map[string]any{"namespaces": []any{"shop"}}, "secrets": map[string]any{"access": false}},
			check: func(t *testing.T, r rendered) {
				roles, bindings := secretRolesByNamespace(t, r)
				assert.Empty(t, roles)
				assert.Empty(t, bindings)
				for _, rule := range ruleSet(renderedAs[rbacv1.ClusterRole](t, r, "ClusterRole", "webchecker-manager").Rules) {
					assert.NotContains(t, rule, "secrets")
				}
			},
		},
		"egress policy": {
			values: map[string]any{"egress": map[string]any{
				"denyCIDRs":           []any{"169.254.0.0/16", "fe80::/10", "fd00:ec2::254/128", "203.0.113.7"},
				"allowCIDRs":          []any{"10.20.0.0/16", "fd12:3456::/32"},
				"denyPrivateNetworks": true,
			}},
			check: func(t *testing.T, r rendered) {
				args := managerContainer(t, r).Args
				assert.Equal(t, []string{"--deny-cidrs=169.254.0.0/16,fe80::/10,fd00:ec2::254/128,203.0.113.7"}, flagsNamed(args, "--deny-cidrs"))
				assert.Equal(t, []string{"--allow-cidrs=10.20.0.0/16,fd12:3456::/32"}, flagsNamed(args, "--allow-cidrs"))
				assert.Equal(t, []string{"--deny-private-networks=true"}, flagsNamed(args, "--deny-private-networks"))
			},
		},
		"egress defaults keep the manager's deny list": {
			values: map[string]any{"egress": map[string]any{"denyCIDRs": []any{}, "allowCIDRs": []any{"192.0.2.0/24"}}},
			check: func(t *testing.T, r rendered) {
				args := managerContainer(t, r).Args
				assert.Empty(t, flagsNamed(args, "--deny-cidrs"), "an empty list must not replace the manager's default deny list")
				assert.Empty(t, flagsNamed(args, "--deny-private-networks"))
				assert.Equal(t, []string{"--allow-cidrs=192.0.2.0/24"}, flagsNamed(args, "--allow-cidrs"))
			},
		},
		"zone given": {
			values: map[string]any{"sharding": map[string]any{"zone": "eu-west-1a"}},
			check: func(t *testing.T, r rendered) {
				var zone []corev1.EnvVar
				for _, env := range managerContainer(t, r).Env {
					if env.Name == "POD_ZONE" {
						zone = append(zone, env)
					}
				}
				assert.Equal(t, []corev1.EnvVar{{Name: "POD_ZONE", Value: "eu-west-1a"}}, zone, "a given zone replaces the pod's label")
			},
		},
		"no proxy by default": {
			values: map[string]any{"proxy": map[string]any{"url": "", "existingSecret": "", "noProxy": []any{}}},
			check: func(t *testing.T, r rendered) {
				c := managerContainer(t, r)
				assert.Empty(t, flagsNamed(c.Args, "--proxy-url"), "probes go direct unless a proxy is set")
				assert.Empty(t, flagsNamed(c.Args, "--no-proxy"))
				assert.Empty(t, flagsNamed(c.Args, "--proxy-credentials-dir"))
				assert.Empty(t, c.VolumeMounts)
				assert.Empty(t, renderedAs[appsv1.Deployment](t, r, "Deployment", "webchecker").Spec.Template.Spec.Volumes)
			},
		},
		"proxy URL": {
			values: map[string]any{"proxy": map[string]any{
				"url":     "http://egress-proxy.internal:3128",
				"noProxy": []any{"example.com", ".svc.cluster.local", "10.0.0.0/8", "fd00::/8", "192.0.2.7"},
			}},
			check: func(t *testing.T, r rendered) {
				c := managerContainer(t, r)
				assert.Equal(t, []string{"--proxy-url=http://egress-proxy.internal:3128"}, flagsNamed(c.Args, "--proxy-url"))
				assert.Equal(t, []string{"--no-proxy=example.com,.svc.cluster.local,10.0.0.0/8,fd00::/8,192.0.2.7"}, flagsNamed(c.Args, "--no-proxy"))
				assert.Empty(t, flagsNamed(c.Args, "--proxy-credentials-dir"), "a proxy without credentials needs no Secret")
				assert.Empty(t, c.VolumeMounts)
			},
		},
		"proxy over TLS, no exemptions": {
			values: map[string]any{"proxy": map[string]any{"url": "https://proxy.example:8443"}},
			check: func(t *testing.T, r rendered) {
				args := managerContainer(t, r).Args
				assert.Equal(t, []string{"--proxy-url=https://proxy.example:8443"}, flagsNamed(args, "--proxy-url"))
				assert.Empty(t, flagsNamed(args, "--no-proxy"))
			},
		},
		"proxy credentials from a Secret, without Secret access": {
			values: map[string]any{
				"proxy":   map[string]any{"url": "http://egress-proxy.internal:3128", "existingSecret": "egress-proxy", "noProxy": []any{"*"}},
				"secrets": map[string]any{"access": false},
			},
			check: func(t *testing.T, r rendered) {
				c := managerContainer(t, r)
				assert.Equal(t, []string{"--proxy-url=http://egress-proxy.internal:3128"}, flagsNamed(c.Args, "--proxy-url"))
				assert.Equal(t, []string{"--proxy-credentials-dir=/etc/webchecker/proxy-credentials"}, flagsNamed(c.Args, "--proxy-credentials-dir"))
				assert.Equal(t, []string{"--no-proxy=*"}, flagsNamed(c.Args, "--no-proxy"))
				assert.Equal(t, []corev1.VolumeMount{{Name: "proxy-credentials", MountPath: "/etc/webchecker/proxy-credentials", ReadOnly: true}}, c.VolumeMounts)
				assert.Equal(t, []corev1.Volume{{Name: "proxy-credentials", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
					SecretName: "egress-proxy",
					Items:      []corev1.KeyToPath{{Key: "username", Path: "username"}, {Key: "password", Path: "password"}},
				}}}}, renderedAs[appsv1.Deployment](t, r, "Deployment", "webchecker").Spec.Template.Spec.Volumes)
				for _, env := range c.Env {
					assert.False(t, env.ValueFrom != nil && env.ValueFrom.SecretKeyRef != nil, "the credentials are files, not environment variables: %s", env.Name)
				}
				assert.Contains(t, c.Args, "--secret-access=false")
				for _, rule := range ruleSet(renderedAs[rbacv1.ClusterRole](t, r, "ClusterRole", "webchecker-manager").Rules) {
					assert.NotContains(t, rule, "secrets", "the kubelet reads the proxy's Secret, not the manager")
				}
			},
		},
		"proxy Secret and keys that YAML would not read as strings": {
			values: map[string]any{"proxy": map[string]any{"url": "http://p:3128", "existingSecret": "123", "usernameKey": "true", "passwordKey": "1.5"}},
			check: func(t *testing.T, r rendered) {
				volumes := renderedAs[appsv1.Deployment](t, r, "Deployment", "webchecker").Spec.Template.Spec.Volumes
				require.Len(t, volumes, 1)
				assert.Equal(t, &corev1.SecretVolumeSource{
					SecretName: "123",
					Items:      []corev1.KeyToPath{{Key: "true", Path: "username"}, {Key: "1.5", Path: "password"}},
				}, volumes[0].Secret)
			},
		},
		"metric labels": {
			values: map[string]any{"manager": map[string]any{"metricLabelsAllowlist": []any{"team", "app.kubernetes.io/part-of"}}},
			check: func(t *testing.T, r rendered) {
				assert.Equal(t, []string{"--metric-labels-allowlist=team,app.kubernetes.io/part-of"}, flagsNamed(managerContainer(t, r).Args, "--metric-labels-allowlist"))
			},
		},
		"CRD managed elsewhere, no PDB": {
			values: map[string]any{"crds": map[string]any{"enabled": false}, "podDisruptionBudget": map[string]any{"enabled": false}},
			check: func(t *testing.T, r rendered) {
				assert.Nil(t, r.find("CustomResourceDefinition", "webcheckers.test.network.io"))
				assert.Nil(t, r.find("PodDisruptionBudget", "webchecker"))
			},
		},
		"image digest": {
			values: map[string]any{"image": map[string]any{"repository": "registry.example/webchecker", "digest": "sha256:" + strings.Repeat("ab", 32)}},
			check: func(t *testing.T, r rendered) {
				assert.Equal(t, "registry.example/webchecker@sha256:"+strings.Repeat("ab", 32), managerContainer(t, r).Image)
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tc.check(t, renderChart(t, tc.values))
		})
	}
}

func TestChartSchemaRejectsBadValues(t *testing.T) {
	ch, err := chart.Load()
	require.NoError(t, err)
	tests := map[string]struct {
		values map[string]any
		want   string
	}{
		"misspelt top-level key":     {map[string]any{"replicas": 3}, "additional properties 'replicas' not allowed"},
		"misspelt nested key":        {map[string]any{"metrics": map[string]any{"secrue": true}}, "additional properties 'secrue' not allowed"},
		"misspelt deep key":          {map[string]any{"metrics": map[string]any{"serviceMonitor": map[string]any{"enable": true}}}, "'enable' not allowed"},
		"replicas as a word":         {map[string]any{"replicaCount": "three"}, "/replicaCount"},
		"boolean as a string":        {map[string]any{"metrics": map[string]any{"secure": "yes"}}, "/metrics/secure"},
		"fractional lease":           {map[string]any{"sharding": map[string]any{"leaseDuration": "2500ms"}}, "/sharding/leaseDuration"},
		"not a duration":             {map[string]any{"sharding": map[string]any{"leaseRenewInterval": "often"}}, "/sharding/leaseRenewInterval"},
		"port out of range":          {map[string]any{"health": map[string]any{"port": 70000}}, "/health/port"},
		"unknown pull policy":        {map[string]any{"image": map[string]any{"pullPolicy": "Sometimes"}}, "/image/pullPolicy"},
		"extra args not a list":      {map[string]any{"manager": map[string]any{"extraArgs": "--zap-devel"}}, "/manager/extraArgs"},
		"negative workers":           {map[string]any{"manager": map[string]any{"probeWorkers": -1}}, "/manager/probeWorkers"},
		"no reconcile workers":       {map[string]any{"manager": map[string]any{"reconcileWorkers": 0}}, "/manager/reconcileWorkers"},
		"no API budget":              {map[string]any{"manager": map[string]any{"kubeApiQPS": 0}}, "/manager/kubeApiQPS"},
		"no reconcile share":         {map[string]any{"manager": map[string]any{"reconcileNamespaceShare": 0}}, "/manager/reconcileNamespaceShare"},
		"message period no duration": {map[string]any{"manager": map[string]any{"statusMessagePeriod": "hourly"}}, "/manager/statusMessagePeriod"},
		"fractional burst":           {map[string]any{"manager": map[string]any{"kubeApiBurst": 1.5}}, "/manager/kubeApiBurst"},
		"exempt precedence":          {map[string]any{"sharding": map[string]any{"flowSchema": map[string]any{"matchingPrecedence": 1}}}, "/sharding/flowSchema/matchingPrecedence"},
		"priority level not a name":  {map[string]any{"sharding": map[string]any{"flowSchema": map[string]any{"priorityLevel": "Leader Election"}}}, "/sharding/flowSchema/priorityLevel"},
		"mistyped security field":    {map[string]any{"securityContext": map[string]any{"readOnlyRootFilesytem": true}}, "'readOnlyRootFilesytem' not allowed"},
		"misspelt secrets key":       {map[string]any{"secrets": map[string]any{"acess": false}}, "'acess' not allowed"},
		"secret access as a word":    {map[string]any{"secrets": map[string]any{"access": "no"}}, "/secrets/access"},
		"selector not a string":      {map[string]any{"secrets": map[string]any{"selector": map[string]any{"probe": "true"}}}, "/secrets/selector"},
		"CIDRs as one string":        {map[string]any{"egress": map[string]any{"denyCIDRs": "10.0.0.0/8,192.168.0.0/16"}}, "/egress/denyCIDRs"},
		"not a CIDR":                 {map[string]any{"egress": map[string]any{"allowCIDRs": []any{"internal.example.com"}}}, "/egress/allowCIDRs/0"},
		"misspelt egress key":        {map[string]any{"egress": map[string]any{"denyPrivateNetwork": true}}, "'denyPrivateNetwork' not allowed"},
		"invalid namespace":          {map[string]any{"watch": map[string]any{"namespaces": []any{"Shop"}}}, "/watch/namespaces/0"},
		"misspelt watch key":         {map[string]any{"watch": map[string]any{"namespaceSelectors": "a=b"}}, "'namespaceSelectors' not allowed"},
		"objective of 100%":          {map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"slo": map[string]any{"objective": 1}}}}, "/metrics/prometheusRule/slo/objective"},
		"objective in percent":       {map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"slo": map[string]any{"objective": 99.9}}}}, "/metrics/prometheusRule/slo/objective"},
		"misspelt rule group":        {map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"operators": map[string]any{"enabled": false}}}}, "'operators' not allowed"},
		"lag not a number":           {map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"operator": map[string]any{"schedulerLag": map[string]any{"seconds": "1s"}}}}}, "/metrics/prometheusRule/operator/schedulerLag/seconds"},
		"SLO without availability":   {map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true, "availability": map[string]any{"enabled": false}}}}, "slo.enabled needs metrics.prometheusRule.availability.enabled"},
		"dashboard label empty":      {map[string]any{"dashboards": map[string]any{"label": ""}}, "/dashboards/label"},
		"metric labels as a string":  {map[string]any{"manager": map[string]any{"metricLabelsAllowlist": "team,severity"}}, "/manager/metricLabelsAllowlist"},
		"not a label name":           {map[string]any{"manager": map[string]any{"metricLabelsAllowlist": []any{"on call"}}}, "/manager/metricLabelsAllowlist/0"},
		"misspelt dashboards key":    {map[string]any{"dashboards": map[string]any{"enable": true}}, "'enable' not allowed"},
		"zone not a label value":     {map[string]any{"sharding": map[string]any{"zone": "eu west"}}, "/sharding/zone"},
		"proxy URL with a password":  {map[string]any{"proxy": map[string]any{"url": "http://user:secret@proxy.internal:3128"}}, "/proxy/url"},
		"proxy URL without scheme":   {map[string]any{"proxy": map[string]any{"url": "proxy.internal:3128"}}, "/proxy/url"},
		"SOCKS proxy":                {map[string]any{"proxy": map[string]any{"url": "socks5://proxy.internal:1080"}}, "/proxy/url"},
		"proxy URL with a path":      {map[string]any{"proxy": map[string]any{"url": "http://proxy.internal:3128/squid"}}, "/proxy/url"},
		"proxy Secret not a name":    {map[string]any{"proxy": map[string]any{"url": "http://proxy:3128", "existingSecret": "Egress_Proxy"}}, "/proxy/existingSecret"},
		"proxy Secret key a path":    {map[string]any{"proxy": map[string]any{"url": "http://proxy:3128", "existingSecret": "egress-proxy", "passwordKey": "../password"}}, "/proxy/passwordKey"},
		"proxy credentials, no URL":  {map[string]any{"proxy": map[string]any{"existingSecret": "egress-proxy"}}, "proxy.existingSecret needs proxy.url"},
		"no-proxy as one string":     {map[string]any{"proxy": map[string]any{"url": "http://proxy:3128", "noProxy": "a.example,b.example"}}, "/proxy/noProxy"},
		"no-proxy entry with comma":  {map[string]any{"proxy": map[string]any{"url": "http://proxy:3128", "noProxy": []any{"a.example,b.example"}}}, "/proxy/noProxy/0"},
		"misspelt proxy key":         {map[string]any{"proxy": map[string]any{"noproxy": []any{"a.example"}}}, "'noproxy' not allowed"},
		"proxy URL from a Secret":    {map[string]any{"proxy": map[string]any{"urlSecretRef": map[string]any{"name": "egress-proxy", "key": "url"}}}, "proxy.urlSecretRef was removed"},
		"no-proxy without a proxy":   {map[string]any{"proxy": map[string]any{"noProxy": []any{"example.com"}}}, "proxy.noProxy needs proxy.url"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := chart.Render(ch, chartRelease, chartNamespace, tc.values)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestChartCRDIsGenerated fails when the chart's copy of the CRD drifts from
// config/crd/bases (run make manifests), or when the chart renders it other
// than verbatim.
func TestChartCRDIsGenerated(t *testing.T) {
	root, err := framework.RepoRoot()
	require.NoError(t, err)
	generated, err := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	require.NoError(t, err)
	copied, err := filepath.Glob(filepath.Join(root, "charts", "webchecker", "files", "crds", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, generated)
	base := func(paths []string) (out []string) {
		for _, p := range paths {
			out = append(out, filepath.Base(p))
		}
		return out
	}
	require.Equal(t, base(generated), base(copied), "the chart's CRDs are not config/crd/bases: run make manifests")
	for i := range generated {
		want, err := os.ReadFile(generated[i])
		require.NoError(t, err)
		got, err := os.ReadFile(copied[i])
		require.NoError(t, err)
		assert.True(t, bytes.Equal(want, got), "%s drifted from %s: run make manifests", copied[i], generated[i])
	}

	var crd unstructured.Unstructured
	data, err := os.ReadFile(filepath.Join(root, "config", "crd", "bases", "test.network.io_webcheckers.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, &crd.Object))
	rendered := renderChart(t, nil).find("CustomResourceDefinition", crd.GetName())
	require.NotNil(t, rendered)
	assert.Equal(t, crd.Object["spec"], rendered.Object["spec"], "the chart renders the generated CRD verbatim")
	assert.Equal(t, "keep", rendered.GetAnnotations()["helm.sh/resource-policy"], "helm uninstall must not delete every WebChecker")
}

// TestChartRBACIsGenerated fails when the chart's rules (every optional
// feature on) differ from what controller-gen generates from the
// +kubebuilder:rbac markers into config/rbac/role.yaml.
func TestChartRBACIsGenerated(t *testing.T) {
	root, err := framework.RepoRoot()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, "config", "rbac", "role.yaml"))
	require.NoError(t, err)
	generated, err := chart.DecodeManifest(string(data))
	require.NoError(t, err)
	want := map[string][]string{}
	for _, obj := range generated {
		var role rbacv1.ClusterRole // a Role has the same shape
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &role))
		want[obj.GetKind()] = append(want[obj.GetKind()], ruleSet(role.Rules)...)
	}
	require.NotEmpty(t, want["ClusterRole"])
	require.NotEmpty(t, want["Role"])

	r := renderChart(t, chartAllFeatures)
	assert.ElementsMatch(t, want["ClusterRole"], ruleSet(renderedAs[rbacv1.ClusterRole](t, r, "ClusterRole", "webchecker-manager").Rules),
		"the chart's ClusterRole differs from config/rbac/role.yaml")
	// The generated Roles (Leases, and the API server's EndpointSlices in
	// default) are two Roles of the chart.
	roles := slices.Concat(ruleSet(renderedAs[rbacv1.Role](t, r, "Role", "webchecker-manager").Rules),
		ruleSet(renderedAs[rbacv1.Role](t, r, "Role", "webchecker-cluster-networks").Rules))
	assert.ElementsMatch(t, want["Role"], roles, "the chart's Roles differ from config/rbac/role.yaml")
}

// TestChartAggregatedRolesMatchConfig fails when the chart's ClusterRoles
// aggregated into view, edit and admin differ, in labels or rules, from
// config/rbac/aggregate_roles.yaml (which TestAggregatedRoles in e2e tests
// against the API server), and checks that the value turns them off.
func TestChartAggregatedRolesMatchConfig(t *testing.T) {
	root, err := framework.RepoRoot()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, "config", "rbac", "aggregate_roles.yaml"))
	require.NoError(t, err)
	config, err := chart.DecodeManifest(string(data))
	require.NoError(t, err)
	require.Len(t, config, 2)

	r := renderChart(t, nil)
	for _, obj := range config {
		var want rbacv1.ClusterRole
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &want))
		got := renderedAs[rbacv1.ClusterRole](t, r, "ClusterRole", want.Name)
		assert.ElementsMatch(t, ruleSet(want.Rules), ruleSet(got.Rules), "%s: rules differ from config/rbac", want.Name)
		for k, v := range want.Labels {
			assert.Equal(t, v, got.Labels[k], "%s: label %s", want.Name, k)
		}
	}

	off := renderChart(t, map[string]any{"rbac": map[string]any{"aggregateToDefaultRoles": false}})
	for _, obj := range config {
		assert.Nil(t, off.find("ClusterRole", obj.GetName()), "rbac.aggregateToDefaultRoles=false still renders %s", obj.GetName())
	}
	assert.NotNil(t, off.find("ClusterRole", "webchecker-manager"), "the manager's role stays")
}

// secretRolesByNamespace returns the rendered Roles and RoleBindings named
// webchecker-manager-secrets by their namespace.
func secretRolesByNamespace(t *testing.T, r rendered) (map[string]*rbacv1.Role, map[string]*rbacv1.RoleBinding) {
	t.Helper()
	roles, bindings := map[string]*rbacv1.Role{}, map[string]*rbacv1.RoleBinding{}
	for _, obj := range r {
		if obj.GetName() != "webchecker-manager-secrets" {
			continue
		}
		switch obj.GetKind() {
		case "Role":
			var role rbacv1.Role
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &role))
			roles[obj.GetNamespace()] = &role
		case "RoleBinding":
			var binding rbacv1.RoleBinding
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &binding))
			bindings[obj.GetNamespace()] = &binding
		}
	}
	return roles, bindings
}
