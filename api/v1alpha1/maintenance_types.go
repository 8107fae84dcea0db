package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Maintenance of a WebChecker: the windows of its spec.maintenanceWindows
// and of the WebCheckerMaintenance objects of its namespace that select it.
const (
	// ConditionMaintenance is True while one of the checker's maintenance
	// windows is open (reason InWindow), False while none is (NoWindow) or
	// while one of them cannot be evaluated (InvalidWindow); absent for a
	// checker with no window. The checker is probed as usual, and its Ready
	// condition says what the probes found; the shipped alerts and error
	// budget rules leave it out while this is True (webchecker_maintenance).
	ConditionMaintenance = "Maintenance"
	// ReasonInWindow: a maintenance window is open (status True); the
	// message says which and when it ends.
	ReasonInWindow = "InWindow"
	// ReasonNoWindow: the checker has maintenance windows, none of them
	// open (status False); the message says when the next one opens.
	ReasonNoWindow = "NoWindow"
	// ReasonInvalidWindow: a window cannot be evaluated, for example an
	// unknown time zone (status False unless another window is open); the
	// message names it.
	ReasonInvalidWindow = "InvalidWindow"
)

// MaxMaintenanceWindows is how many windows a WebChecker's spec, and a
// WebCheckerMaintenance, hold at most; MaxMaintenanceSelected is how many
// WebCheckerMaintenance objects count for one checker.
const (
	MaxMaintenanceWindows  = 16
	MaxMaintenanceSelected = 32
)

// MaintenanceWindow is a time during which a checker's failures are
// expected: recurring (schedule and duration, in timeZone) or one-off
// (start and end).
//
// +kubebuilder:validation:XValidation:rule="has(self.schedule) == has(self.duration)",message="schedule and duration go together: a recurring window starts on its schedule and lasts its duration"
// +kubebuilder:validation:XValidation:rule="has(self.start) == has(self.end)",message="start and end go together: a one-off window needs both"
// +kubebuilder:validation:XValidation:rule="has(self.schedule) != has(self.start)",message="a window is either recurring (schedule and duration) or one-off (start and end)"
// +kubebuilder:validation:XValidation:rule="!has(self.timeZone) || has(self.schedule)",message="timeZone is for a recurring window; start and end carry their own offset"
// +kubebuilder:validation:XValidation:rule="!has(self.start) || !has(self.end) || timestamp(self.end) > timestamp(self.start)",message="end must be after start"
// +kubebuilder:validation:XValidation:rule="!has(self.start) || !has(self.end) || timestamp(self.end) - timestamp(self.start) <= duration('2232h')",message="a one-off window lasts at most 93 days (2232h)"
type MaintenanceWindow struct {
	// Schedule is when a recurring window opens: a cron expression of five
	// fields (minute, hour, day of month, month, day of week; names such as
	// MON and JAN, ranges, steps and lists as in crontab(5)) or @yearly,
	// @monthly, @weekly, @daily, @hourly, read in timeZone's wall clock.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^\s*(@[A-Za-z]+|[0-9A-Za-z*,/-]+(\s+[0-9A-Za-z*,/-]+){4})\s*$`
	Schedule string `json:"schedule,omitempty"`
	// Duration is how long a recurring window stays open, from 1m to 31d
	// (744h); elapsed time, so a window across a change of the clock lasts
	// as long as on any other day.
	//
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') || duration(self) >= duration('1m')",message="duration must be at least 1m"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') || duration(self) <= duration('744h')",message="duration must be at most 744h (31 days)"
	Duration *metav1.Duration `json:"duration,omitempty"`
	// TimeZone is the IANA time zone the schedule is read in, such as
	// Europe/Berlin; default UTC. The operator carries its own copy of the
	// time zone database.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$`
	TimeZone string `json:"timeZone,omitempty"`
	// Start is when a one-off window opens (RFC 3339, such as
	// 2026-12-24T18:00:00+01:00).
	//
	// +optional
	Start *metav1.Time `json:"start,omitempty"`
	// End is when a one-off window closes; at most 93 days after start.
	//
	// +optional
	End *metav1.Time `json:"end,omitempty"`
}

// WebCheckerMaintenanceSpec gives maintenance windows to the WebCheckers of
// its namespace that its selector selects.
type WebCheckerMaintenanceSpec struct {
	// Selector selects the WebCheckers of this namespace the windows apply
	// to, by label; an empty selector ({}) selects every one.
	//
	// +required
	Selector metav1.LabelSelector `json:"selector"`
	// Windows are the maintenance windows, recurring or one-off.
	//
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Windows []MaintenanceWindow `json:"windows"`
	// Description says what the maintenance is for, such as "database
	// upgrade"; it is part of the Maintenance condition's message.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Description string `json:"description,omitempty"`
}

// WebCheckerMaintenance is a set of maintenance windows for the
// WebCheckers of its namespace that it selects: one object puts many
// checkers in maintenance at once (see WebCheckerSpec.MaintenanceWindows
// for a window of one checker). A checker counts the windows of at most
// 32 (MaxMaintenanceSelected) such objects, by name.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=wcm
// +kubebuilder:printcolumn:name="Description",type=string,JSONPath=`.spec.description`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type WebCheckerMaintenance struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec WebCheckerMaintenanceSpec `json:"spec"`
}

// WebCheckerMaintenanceList is a list of WebCheckerMaintenances.
//
// +kubebuilder:object:root=true
type WebCheckerMaintenanceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WebCheckerMaintenance `json:"items"`
}

func init() {
	SchemeBuilder.Register(&WebCheckerMaintenance{}, &WebCheckerMaintenanceList{})
}
