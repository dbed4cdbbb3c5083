// Package core is what every part of the engine shares and nothing of it
// acts: the settings a lock is made with (options, defaults, bounds), the
// errors and events it reports, its keys on the nodes, and the validity
// window. The root package re-exports its public names.
package core
