// Package guard keeps the uninstall guard's admission policies in place while any node is tuned.
package guard
