// Package scrapeauth guards the metrics endpoint when it is served over
// HTTPS (--metrics-secure): a client must present a bearer token that the
// API server accepts (a TokenReview), for a user the API server allows to
// get the path it asks for (a SubjectAccessReview on that non-resource
// URL), as kube-rbac-proxy and controller-runtime's metrics filter do.
// Decisions are cached briefly, so a scraper costs the API server two
// requests every few minutes, not two per scrape.
//
// It depends on client-go only: controller-runtime's own filter brings in
// k8s.io/apiserver and CEL, which made the manager's binary (and the pages
// of it every replica keeps resident) over half again as large.
package scrapeauth
