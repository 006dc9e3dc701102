package env

import (
	"time"

	"github.com/snapq/snapq/artifacts"
)

// S3 reads the SNAPQ_S3_* variables and SNAPQ_PRESIGN_EXPIRY.
func S3(r *Reader) artifacts.Config {
	c := artifacts.DefaultConfig()
	c.Endpoint = r.String("SNAPQ_S3_ENDPOINT", "127.0.0.1:9000")
	c.AccessKey = r.String("SNAPQ_S3_ACCESS_KEY", "")
	c.SecretKey = r.String("SNAPQ_S3_SECRET_KEY", "")
	c.Bucket = r.String("SNAPQ_S3_BUCKET", "snapq")
	c.UseSSL = r.Bool("SNAPQ_S3_USE_SSL", false)
	c.Region = r.String("SNAPQ_S3_REGION", c.Region)
	c.PresignExpiry = r.Duration("SNAPQ_PRESIGN_EXPIRY", 15*time.Minute)
	c.PublicURL = r.String("SNAPQ_S3_PUBLIC_URL", "")
	return c
}
