// Package udp is groupd's UDP transport: the sockets of the wire protocol.
package udp
