module svc-agent/bench/peers/authorize-go

go 1.19
