package metricsauth

import "testing"

func TestOptions(t *testing.T) {
	if o := Options(":8080", true); !o.SecureServing || o.FilterProvider == nil || o.BindAddress != ":8080" {
		t.Errorf("secure: %+v, want HTTPS behind the filter", o)
	}
	if o := Options(":8080", false); o.SecureServing || o.FilterProvider != nil {
		t.Errorf("insecure: %+v, want plain HTTP", o)
	}
}
