package mech_test

import (
	"fmt"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/mech"
)

// ExamplePLDLoss charges 50 releases of a Laplace mechanism by the
// privacy-loss distribution of what it samples: at δ = 1e-6 they cost
// less than the 50·ε of basic composition (the gap grows with the count).
func ExamplePLDLoss() {
	m, err := mech.NewLaplace(0.1, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	one, err := mech.PLDLoss(m)
	if err != nil {
		fmt.Println(err)
		return
	}
	all, err := one.Times(50)
	if err != nil {
		fmt.Println(err)
		return
	}
	eps, err := all.EpsilonAt(1e-6, account.Balle2020)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: 50 releases, ε = %.3f at δ = 1e-6 (basic composition: %.1f)\n", all.Kind(), eps, 50*0.1)
	// Output: pld: 50 releases, ε = 3.121 at δ = 1e-6 (basic composition: 5.0)
}
