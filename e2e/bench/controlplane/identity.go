package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/networkio/webchecker/e2e/framework"
)

// The identities the bench runs as, unless --admin: the replicas as the
// ServiceAccount replicaAccount in leaseNamespace, bound to the generated
// RBAC rules (config/rbac/role.yaml) and nothing else, their Lease requests
// in the API server's leader-election priority level by the chart's
// FlowSchema; the creates as the user creatorUser, whom only a Role lets
// create WebCheckers. Neither is in system:masters, which API Priority and
// Fairness exempts: the API server shares itself between them as it does in
// a cluster.
const (
	replicaAccount = "webchecker"
	creatorUser    = "bench-creator"
	// generatedRoleNamespace is the namespace config/rbac/role.yaml gives
	// the Lease Role (the +kubebuilder:rbac marker's); the bench puts it
	// in leaseNamespace.
	generatedRoleNamespace = "webchecker-system"
	// leaseFlowSchema mirrors the chart's (templates/flowschema.yaml, at
	// its default values), which e2e/chart's tests prove.
	leaseFlowSchema           = "webchecker-leases"
	leaseFlowSchemaLevel      = "leader-election"
	leaseFlowSchemaPrecedence = 250
)

// identities are what the replicas and the creates connect with.
type identities struct {
	// replicaKubeconfig is the replicas' kubeconfig file.
	replicaKubeconfig string
	// creator is the creates' rest.Config, without QPS and Burst.
	creator *rest.Config
}

// adminIdentities is --admin: everything as the control plane's admin.
func (e *env) adminIdentities() identities {
	return identities{replicaKubeconfig: e.cp.KubeconfigPath, creator: rest.CopyConfig(e.cp.Config)}
}

// ownIdentities creates the replicas' ServiceAccount with the generated
// RBAC rules and the Lease FlowSchema, and the creating user, and returns
// their credentials. The namespaces must exist.
func (e *env) ownIdentities(ctx context.Context) (identities, error) {
	kube, err := kubernetes.NewForConfig(e.cp.Config)
	if err != nil {
		return identities{}, fmt.Errorf("creating clientset: %w", err)
	}
	if err := grantReplicas(ctx, kube); err != nil {
		return identities{}, err
	}
	if err := grantCreator(ctx, kube); err != nil {
		return identities{}, err
	}
	var ids identities
	if ids.replicaKubeconfig, _, err = e.cp.ServiceAccountKubeconfig(ctx, leaseNamespace, replicaAccount); err != nil {
		return identities{}, err
	}
	path, err := e.cp.UserKubeconfig(creatorUser)
	if err != nil {
		return identities{}, err
	}
	if ids.creator, err = restConfigFrom(path); err != nil {
		return identities{}, err
	}
	return ids, nil
}

// grantReplicas creates the replicas' ServiceAccount, the generated RBAC
// rules bound to it and the FlowSchema of its Lease requests.
func grantReplicas(ctx context.Context, kube kubernetes.Interface) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: leaseNamespace, Name: replicaAccount}}
	if _, err := kube.CoreV1().ServiceAccounts(leaseNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the replicas' ServiceAccount: %w", err)
	}
	clusterRoles, roles, err := generatedRBAC()
	if err != nil {
		return err
	}
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: leaseNamespace, Name: replicaAccount}}
	for _, cr := range clusterRoles {
		if _, err := kube.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating ClusterRole %s: %w", cr.Name, err)
		}
		crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: cr.Name}, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name}}
		if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("binding ClusterRole %s: %w", cr.Name, err)
		}
	}
	for _, r := range roles {
		if r.Namespace == generatedRoleNamespace {
			r.Namespace = leaseNamespace
		}
		if err := createRoleBound(ctx, kube, r, subjects); err != nil {
			return err
		}
	}
	return createLeaseFlowSchema(ctx, kube)
}

// grantCreator lets creatorUser create, read and delete WebCheckers in
// checkerNamespace, and nothing else.
func grantCreator(ctx context.Context, kube kubernetes.Interface) error {
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: checkerNamespace, Name: creatorUser},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"test.network.io"}, Resources: []string{"webcheckers"},
			Verbs: []string{"create", "get", "list", "watch", "delete"}}},
	}
	return createRoleBound(ctx, kube, role, []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: creatorUser}})
}

// createRoleBound creates role and a RoleBinding of it to subjects.
func createRoleBound(ctx context.Context, kube kubernetes.Interface, role *rbacv1.Role, subjects []rbacv1.Subject) error {
	if _, err := kube.RbacV1().Roles(role.Namespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating Role %s/%s: %w", role.Namespace, role.Name, err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: role.Namespace, Name: role.Name}, Subjects: subjects,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}}
	if _, err := kube.RbacV1().RoleBindings(role.Namespace).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("binding Role %s/%s: %w", role.Namespace, role.Name, err)
	}
	return nil
}

// createLeaseFlowSchema puts the replicas' Lease requests in the
// leader-election priority level, as the chart does.
func createLeaseFlowSchema(ctx context.Context, kube kubernetes.Interface) error {
	fs := &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: leaseFlowSchema},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: leaseFlowSchemaLevel},
			MatchingPrecedence:         leaseFlowSchemaPrecedence,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindServiceAccount,
					ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: leaseNamespace, Name: replicaAccount}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{APIGroups: []string{"coordination.k8s.io"},
					Resources: []string{"leases"}, Verbs: []string{"get", "create", "update", "delete"},
					Namespaces: []string{leaseNamespace}}},
			}},
		},
	}
	if _, err := kube.FlowcontrolV1().FlowSchemas().Create(ctx, fs, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating FlowSchema %s: %w", fs.Name, err)
	}
	return nil
}

// generatedRBAC reads the ClusterRoles and Roles of config/rbac/role.yaml,
// which controller-gen generates from the code's +kubebuilder:rbac markers.
func generatedRBAC() ([]*rbacv1.ClusterRole, []*rbacv1.Role, error) {
	root, err := framework.RepoRoot()
	if err != nil {
		return nil, nil, err
	}
	path := filepath.Join(root, "config", "rbac", "role.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the generated RBAC rules: %w", err)
	}
	objs, err := decodeDocuments(data)
	if err != nil {
		return nil, nil, fmt.Errorf("decoding %s: %w", path, err)
	}
	var (
		clusterRoles []*rbacv1.ClusterRole
		roles        []*rbacv1.Role
	)
	for _, obj := range objs {
		switch o := obj.(type) {
		case *rbacv1.ClusterRole:
			clusterRoles = append(clusterRoles, o)
		case *rbacv1.Role:
			roles = append(roles, o)
		default:
			return nil, nil, fmt.Errorf("%s: unexpected %T", path, obj)
		}
	}
	if len(clusterRoles) == 0 {
		return nil, nil, fmt.Errorf("%s holds no ClusterRole", path)
	}
	return clusterRoles, roles, nil
}

// decodeDocuments decodes every document of a multi-document YAML file
// into the client-go type of its kind.
func decodeDocuments(data []byte) ([]runtime.Object, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	decoder := clientgoscheme.Codecs.UniversalDeserializer()
	var objs []runtime.Object
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			return nil, err
		}
		objs = append(objs, obj)
	}
}

// restConfigFrom loads the rest.Config of a kubeconfig file.
func restConfigFrom(path string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", path, err)
	}
	return cfg, nil
}
