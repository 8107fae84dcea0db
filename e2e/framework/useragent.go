package framework

import "strings"

// userAgentPrefix and userAgentSuffix frame the shard id in the User-Agent
// header of every probe a manager sends: "webchecker (shard <id>)".
const userAgentPrefix, userAgentSuffix = "webchecker (shard ", ")"

// ShardOfUserAgent returns the shard id in a probe's User-Agent header, and
// false when the header is not a manager's.
func ShardOfUserAgent(ua string) (string, bool) {
	if !strings.HasPrefix(ua, userAgentPrefix) || !strings.HasSuffix(ua, userAgentSuffix) {
		return "", false
	}
	return strings.TrimSuffix(strings.TrimPrefix(ua, userAgentPrefix), userAgentSuffix), true
}
