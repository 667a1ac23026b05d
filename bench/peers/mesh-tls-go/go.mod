module svc-agent/bench/peers/mesh-tls-go

go 1.19
